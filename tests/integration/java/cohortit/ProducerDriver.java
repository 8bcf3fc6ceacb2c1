package cohortit;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * KafkaProducer (idempotent, acks=all: the 4.x defaults) writing COUNT records
 * "k<i>"/"v<i>" to TOPIC, record i to partition i % PARTITIONS (or by the
 * default partitioner with PARTITIONS 0), then one JSON line:
 *   {"ev":"produced","count":N,"offsets":{"t:p":[first,last]}}
 *
 *   ProducerDriver BOOTSTRAP TOPIC COUNT PARTITIONS [--timestamps BASE] [key=value ...]
 * TOPIC, COUNT and PARTITIONS may be comma lists of one length: each topic gets
 * its own COUNT records (i from 0) in one producer (one JVM for a test's
 * several topics).
 * --timestamps BASE: record i is stamped BASE + (i % 7) * 1000 (out of order and
 * with ties, the same on every broker) instead of the send time.
 * Exit 0 when every send was acknowledged with the offsets in order, 1 otherwise.
 */
public final class ProducerDriver {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: ProducerDriver BOOTSTRAP TOPIC COUNT PARTITIONS [k=v ...]");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        Long base = null;
        for (int i = 4; i < args.length; i++) {
            if (args[i].equals("--timestamps")) {
                base = Long.parseLong(args[++i]);
                continue;
            }
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        String[] topics = args[1].split(",");
        String[] counts = args[2].split(",");
        String[] partitionCounts = args[3].split(",");
        if (counts.length != topics.length || partitionCounts.length != topics.length) {
            System.err.println("ProducerDriver: TOPIC, COUNT and PARTITIONS lists differ in length");
            System.exit(2);
        }
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int t = 0; t < topics.length; t++) {
                int count = Integer.parseInt(counts[t]);
                int partitions = Integer.parseInt(partitionCounts[t]);
                for (int i = 0; i < count; i++) {
                    Integer part = partitions > 0 ? i % partitions : null;
                    Long ts = base == null ? null : base + (i % 7) * 1000L;
                    sent.add(p.send(new ProducerRecord<>(topics[t], part, ts, "k" + i, "v" + i)));
                }
            }
            p.flush();
            Map<String, long[]> ranges = new TreeMap<>();
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata md = f.get();
                String tp = md.topic() + ":" + md.partition();
                long[] r = ranges.get(tp);
                if (r == null) {
                    ranges.put(tp, new long[] {md.offset(), md.offset()});
                } else if (md.offset() != r[1] + 1) {
                    Json.emit(Json.obj("ev", "error", "error", "OutOfOrder", "message",
                            tp + " offset " + md.offset() + " after " + r[1]));
                    System.exit(1);
                } else {
                    r[1] = md.offset();
                }
            }
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<String, long[]> e : ranges.entrySet())
                out.put(e.getKey(), List.of(e.getValue()[0], e.getValue()[1]));
            Json.emit(Json.obj("ev", "produced", "count", sent.size(), "offsets", out));
        } catch (Exception e) {
            Map<String, Object> ev = Json.error(e);
            ev.put("ev", "error");
            Json.emit(ev);
            System.exit(1);
        }
    }
}
