package cohortit;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One KafkaConsumer (the classic group protocol, or with group.protocol=consumer
 * the consumer protocol of KIP-848) driven over stdin/stdout by the
 * Python tests (test_java_*.py).
 *
 *   ConsumerDriver BOOTSTRAP GROUP TOPIC[,TOPIC...]|re2:PATTERN [--commit-on-revoke] [--quiet] [--wait-go] [key=value ...]
 *
 * --wait-go: the JVM and the consumer start, print {"ev":"started"} and
 * subscribe only on the command "go" (a test that needs a member to join
 * within a session timeout does not wait for a JVM start under load).
 *
 * re2:PATTERN subscribes to a SubscriptionPattern (KIP-848: the broker matches
 * it, RE2 syntax; group.protocol=consumer only) instead of a topic list.
 * key=value are consumer properties (partition.assignment.strategy,
 * group.instance.id, session.timeout.ms, ...). With --commit-on-revoke the
 * rebalance listener commits the positions of the revoked partitions
 * synchronously in onPartitionsRevoked. Events, one JSON object a line:
 *   {"ev":"ready"}
 *   {"ev":"assigned"|"revoked"|"lost","parts":[...],"assignment":[...],"member":..,"generation":..}
 *   {"ev":"commit","offsets":{"t:p":N},"error":null|{...},"in":"revoke"|"command"}
 *   {"ev":"owns","us":N,"assignment":[...]}   what it owns from now on: after
 *                                      assigned, at the end of revoked and lost
 *   {"ev":"msg","tp":"t:p","offset":N,"key":..,"value":..,"us":N}   (not with --quiet)
 *   {"ev":"committed","offsets":{"t:p":N|null}}
 *   {"ev":"position","offsets":{"t:p":N}}
 *   {"ev":"error",...}                 poll failed (the consumer is then closed, exit 4)
 *   {"ev":"closed"}
 * Commands on stdin: commit | committed T:P... | position | close | close-remain |
 * close-leave | exit (halt without closing, a crash).
 * "us" (also in commit events) is System.nanoTime() in microseconds: on Linux
 * CLOCK_MONOTONIC, comparable with the other member programs' stamps.
 */
public final class ConsumerDriver {
    private final KafkaConsumer<String, String> consumer;
    private final boolean commitOnRevoke;
    private final boolean quiet;
    private final ConcurrentLinkedQueue<String> commands = new ConcurrentLinkedQueue<>();
    private final Map<TopicPartition, Long> consumedUpTo = new HashMap<>();

    private ConsumerDriver(Properties props, boolean commitOnRevoke, boolean quiet) {
        this.consumer = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        this.commitOnRevoke = commitOnRevoke;
        this.quiet = quiet;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: ConsumerDriver BOOTSTRAP GROUP TOPICS [--commit-on-revoke] [--quiet] [k=v ...]");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        boolean commitOnRevoke = false, quiet = false, waitGo = false;
        for (int i = 3; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--commit-on-revoke")) {
                commitOnRevoke = true;
            } else if (a.equals("--quiet")) {
                quiet = true;
            } else if (a.equals("--wait-go")) {
                waitGo = true;
            } else {
                int eq = a.indexOf('=');
                if (eq <= 0)
                    throw new IllegalArgumentException("not key=value: " + a);
                props.put(a.substring(0, eq), a.substring(eq + 1));
            }
        }
        ConsumerDriver d = new ConsumerDriver(props, commitOnRevoke, quiet);
        d.run(args[2], waitGo);
        System.exit(0);
    }

    private Map<String, Object> membership(String ev, Collection<TopicPartition> parts) {
        ConsumerGroupMetadata g = consumer.groupMetadata();
        return Json.obj("ev", ev, "parts", Json.tps(parts), "assignment", Json.tps(consumer.assignment()),
                "member", g.memberId(), "generation", g.generationId(), "instance", g.groupInstanceId());
    }

    private static long nowUs() {
        return System.nanoTime() / 1000;
    }

    private void emitOwns(Collection<TopicPartition> gone) {
        Set<TopicPartition> owns = new java.util.HashSet<>(consumer.assignment());
        owns.removeAll(gone);
        Json.emit(Json.obj("ev", "owns", "us", nowUs(), "assignment", Json.tps(owns)));
    }

    /** Synchronous commit of what this consumer has consumed of PARTS; prints the outcome. */
    private void commitConsumed(Collection<TopicPartition> parts, String where) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition p : parts) {
            Long next = consumedUpTo.get(p);
            if (next != null)
                offsets.put(p, new OffsetAndMetadata(next));
        }
        Object err = null;
        try {
            if (!offsets.isEmpty())
                consumer.commitSync(offsets);
        } catch (RuntimeException e) {
            err = Json.error(e);
        }
        Json.emit(Json.obj("ev", "commit", "in", where, "offsets", Json.byTp(offsets, OffsetAndMetadata::offset),
                "error", err, "us", nowUs()));
    }

    private final ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            Json.emit(membership("revoked", parts));
            if (commitOnRevoke)
                commitConsumed(parts, "revoke");
            for (TopicPartition p : parts)
                consumedUpTo.remove(p);
            emitOwns(parts);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            Json.emit(membership("assigned", parts));
            emitOwns(List.of());
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> parts) {
            Json.emit(membership("lost", parts));
            for (TopicPartition p : parts)
                consumedUpTo.remove(p);
            emitOwns(parts);
        }
    };

    private void run(String topics, boolean waitGo) throws Exception {
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null)
                    commands.add(line.trim());
            } catch (Exception e) {
                // stdin closed: the test is gone; PDEATHSIG ends us
            }
            commands.add("close");
        });
        reader.setDaemon(true);
        reader.start();
        if (waitGo) {
            Json.emit(Json.obj("ev", "started"));
            while (true) {
                String c = commands.poll();
                if (c == null) {
                    Thread.sleep(5);
                } else if (c.equals("go")) {
                    break;
                } else if (c.equals("exit")) {
                    Runtime.getRuntime().halt(3);
                } else if (c.startsWith("close")) {
                    consumer.close();
                    Json.emit(Json.obj("ev", "closed"));
                    return;
                }
            }
        }

        if (topics.startsWith("re2:"))
            consumer.subscribe(new SubscriptionPattern(topics.substring(4)), listener);
        else
            consumer.subscribe(Arrays.asList(topics.split(",")), listener);
        Json.emit(Json.obj("ev", "ready"));
        while (true) {
            ConsumerRecords<String, String> records;
            try {
                records = consumer.poll(Duration.ofMillis(100));
            } catch (RuntimeException e) {
                Map<String, Object> ev = Json.error(e);
                ev.put("ev", "error");
                Json.emit(ev);
                try {
                    consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP));
                } catch (RuntimeException ignored) {
                    // the error above is what the test looks at
                }
                System.exit(4);
                return;
            }
            for (ConsumerRecord<String, String> r : records) {
                TopicPartition p = new TopicPartition(r.topic(), r.partition());
                consumedUpTo.put(p, r.offset() + 1);
                if (!quiet)
                    Json.emit(Json.obj("ev", "msg", "tp", Json.tp(p), "offset", r.offset(), "key", r.key(),
                            "value", r.value(), "us", nowUs()));
            }
            String cmd;
            while ((cmd = commands.poll()) != null) {
                if (handle(cmd))
                    return;
            }
        }
    }

    /** Runs one stdin command; true when the consumer is closed. */
    private boolean handle(String cmd) {
        String[] w = cmd.split("\\s+");
        switch (w[0]) {
        case "":
            return false;
        case "commit":
            commitConsumed(new ArrayList<>(consumer.assignment()), "command");
            return false;
        case "committed": {
            Set<TopicPartition> parts = new java.util.HashSet<>();
            for (int i = 1; i < w.length; i++)
                parts.add(Json.parseTp(w[i]));
            Map<TopicPartition, OffsetAndMetadata> c = consumer.committed(parts);
            Json.emit(Json.obj("ev", "committed", "offsets", Json.byTp(c, o -> o == null ? null : o.offset())));
            return false;
        }
        case "position": {
            Map<TopicPartition, Long> pos = new HashMap<>();
            for (TopicPartition p : consumer.assignment())
                pos.put(p, consumer.position(p));
            Json.emit(Json.obj("ev", "position", "offsets", Json.byTp(pos, v -> v)));
            return false;
        }
        case "close":
        case "close-remain":
        case "close-leave": {
            CloseOptions.GroupMembershipOperation op = w[0].equals("close") ? CloseOptions.GroupMembershipOperation.DEFAULT
                    : w[0].equals("close-remain") ? CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP
                    : CloseOptions.GroupMembershipOperation.LEAVE_GROUP;
            consumer.close(CloseOptions.groupMembershipOperation(op));
            Json.emit(Json.obj("ev", "closed"));
            return true;
        }
        case "exit":
            Runtime.getRuntime().halt(3);
            return true;
        default:
            Json.emit(Json.obj("ev", "error", "error", "BadCommand", "message", cmd));
            return false;
        }
    }
}
