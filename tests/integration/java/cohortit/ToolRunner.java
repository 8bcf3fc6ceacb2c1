package cohortit;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.common.utils.internals.Exit;

/**
 * Runs Kafka's command-line tools (their main classes, from the installed
 * jars) one after another in this JVM, so that a test's hundred invocations
 * do not pay a JVM start each (seconds apiece on a loaded 2-core machine).
 * Kafka's tools end through org.apache.kafka.common.utils.internals.Exit.
 * Its exit procedure is replaced by one that does what System.exit does to
 * the tool: it runs the shutdown hooks the tool registered, reports the
 * status, and never returns (the tool's thread parks for good, as a real
 * exit leaves no code after it; an exception could be caught by the tool's
 * own catch (Throwable)). System.in, out and err are swapped per invocation.
 * test_kafka_tools.py checks for a sample of commands that this prints and
 * exits as separate processes do.
 *
 * Input, one invocation a line, fields separated by tabs:
 *   MAIN_CLASS  BASE64_STDIN  ARG...
 * Output, one JSON line each: {"rc":N,"out":"...","err":"..."}
 */
public final class ToolRunner {
    private static volatile CompletableFuture<Integer> exitStatus;
    private static final List<Thread> hooks = new ArrayList<>();

    private static void exitLikeSystemExit(int status) {
        List<Thread> run;
        synchronized (hooks) {
            run = new ArrayList<>(hooks);
            hooks.clear();
        }
        for (Thread h : run)
            h.start();
        for (Thread h : run) {
            try {
                h.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        exitStatus.complete(status);
        while (true)
            LockSupport.park();
    }

    public static void main(String[] args) throws Exception {
        Json.obj(); // Json's stdout is the real one, taken before any swap
        Exit.setExitProcedure((status, message) -> exitLikeSystemExit(status));
        Exit.setHaltProcedure((status, message) -> exitLikeSystemExit(status));
        Exit.setShutdownHookAdder((name, runnable) -> {
            synchronized (hooks) {
                hooks.add(new Thread(runnable, name));
            }
        });
        PrintStream realOut = System.out, realErr = System.err;
        InputStream realIn = System.in;
        BufferedReader in = new BufferedReader(new InputStreamReader(realIn, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty())
                continue;
            List<String> f = new ArrayList<>(Arrays.asList(line.split("\t", -1)));
            String mainClass = f.remove(0);
            byte[] stdin = Base64.getDecoder().decode(f.remove(0));
            String[] toolArgs = f.toArray(new String[0]);
            ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
            PrintStream po = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream pe = new PrintStream(err, true, StandardCharsets.UTF_8);
            CompletableFuture<Integer> status = new CompletableFuture<>();
            exitStatus = status;
            System.setIn(new ByteArrayInputStream(stdin));
            System.setOut(po);
            System.setErr(pe);
            Thread tool = new Thread(() -> {
                try {
                    Method m = Class.forName(mainClass).getMethod("main", String[].class);
                    m.invoke(null, (Object) toolArgs);
                    exitLikeSystemExit(0);
                } catch (InvocationTargetException e) {
                    // what the JVM prints for an uncaught exception, and its exit status
                    pe.print("Exception in thread \"main\" ");
                    e.getCause().printStackTrace(pe);
                    exitLikeSystemExit(1);
                } catch (ReflectiveOperationException e) {
                    e.printStackTrace(pe);
                    exitLikeSystemExit(1);
                }
            }, "main");
            tool.setDaemon(true);
            tool.start();
            int rc = status.get();
            po.flush();
            pe.flush();
            System.setIn(realIn);
            System.setOut(realOut);
            System.setErr(realErr);
            Json.emit(Json.obj("rc", rc, "out", out.toString(StandardCharsets.UTF_8),
                    "err", err.toString(StandardCharsets.UTF_8)));
        }
        System.exit(0);
    }
}
