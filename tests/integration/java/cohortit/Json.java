package cohortit;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.TopicPartition;

/** A JSON writer for the drivers' one-line events (maps, lists, strings, numbers). */
final class Json {
    private Json() {}

    private static final PrintStream OUT = System.out;

    /** Prints one event line and flushes: the Python side reads stdout line by line. */
    static synchronized void emit(Object value) {
        OUT.println(write(value));
        OUT.flush();
    }

    /** An ordered map from alternating keys and values. */
    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2)
            m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    /** "topic:partition", the drivers' name for a partition on both sides. */
    static String tp(TopicPartition p) {
        return p.topic() + ":" + p.partition();
    }

    static TopicPartition parseTp(String s) {
        int colon = s.lastIndexOf(':');
        if (colon <= 0)
            throw new IllegalArgumentException("not topic:partition: " + s);
        return new TopicPartition(s.substring(0, colon), Integer.parseInt(s.substring(colon + 1)));
    }

    /** Partitions as a sorted list of "t:p". */
    static List<String> tps(Collection<TopicPartition> parts) {
        TreeSet<String> s = new TreeSet<>();
        for (TopicPartition p : parts)
            s.add(tp(p));
        return new ArrayList<>(s);
    }

    /** A map keyed by partition, as a sorted map keyed by "t:p". */
    static <V> Map<String, Object> byTp(Map<TopicPartition, V> m, java.util.function.Function<V, Object> f) {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, V> e : m.entrySet())
            out.put(tp(e.getKey()), f.apply(e.getValue()));
        return out;
    }

    static Map<String, Object> error(Throwable t) {
        while ((t instanceof java.util.concurrent.ExecutionException
                || t instanceof java.util.concurrent.CompletionException) && t.getCause() != null)
            t = t.getCause();
        return obj("error", t.getClass().getSimpleName(), "message", String.valueOf(t.getMessage()));
    }

    static String write(Object v) {
        StringBuilder b = new StringBuilder();
        write(b, v);
        return b.toString();
    }

    private static void write(StringBuilder b, Object v) {
        if (v instanceof Optional)
            v = ((Optional<?>) v).orElse(null);
        if (v == null) {
            b.append("null");
        } else if (v instanceof Number || v instanceof Boolean) {
            b.append(v);
        } else if (v instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first)
                    b.append(',');
                first = false;
                string(b, String.valueOf(e.getKey()));
                b.append(':');
                write(b, e.getValue());
            }
            b.append('}');
        } else if (v instanceof Collection) {
            b.append('[');
            boolean first = true;
            for (Object o : (Collection<?>) v) {
                if (!first)
                    b.append(',');
                first = false;
                write(b, o);
            }
            b.append(']');
        } else {
            string(b, v.toString());
        }
    }

    private static void string(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\')
                b.append('\\').append(c);
            else if (c < 0x20)
                b.append(String.format("\\u%04x", (int) c));
            else
                b.append(c);
        }
        b.append('"');
    }
}
