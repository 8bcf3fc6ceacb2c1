package cohortit;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ClassicGroupDescription;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DeleteConsumerGroupOffsetsResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupResult;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Kafka's AdminClient driven over stdin/stdout by test_java_admin.py: one
 * command a line, one JSON answer a line, {"ok":RESULT} or {"error":CLASS,"message":..}
 * (for calls with per-item results, RESULT maps each item to its value or error).
 *
 *   AdminDriver BOOTSTRAP [key=value ...]
 * Commands:
 *   createTopics T:N ...                          (replication factor 1)
 *   listGroups [types=consumer,classic] [states=Stable,Empty] [protocolTypes=consumer]
 *   listConsumerGroups [states=Stable,...]        (the deprecated 3.x call)
 *   describeConsumerGroups G ...   | describeClassicGroups G ...
 *   listConsumerGroupOffsets G [T:P ...] [requireStable]
 *   listOffsets T:P=earliest|latest|max|TIMESTAMP ...
 *   alterConsumerGroupOffsets G T:P=OFFSET[/METADATA] ...
 *   deleteConsumerGroups G ...
 *   deleteConsumerGroupOffsets G T:P ...
 *   removeMembersFromConsumerGroup G [INSTANCE_ID ...]   (none: every member)
 *   describeCluster
 *   createTopicsEach [validateOnly] T:N:RF[/KEY=VALUE...] ...   (per-topic results; N, RF -1: defaults)
 *   deleteTopics T ...   | createPartitions [validateOnly] T=N ...
 *   describeTopics T ... | listTopics [internal]
 *   describeConfigs topic:T|broker:ID ...
 */
public final class AdminDriver {
    private final Admin admin;

    private AdminDriver(Admin admin) {
        this.admin = admin;
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        try (Admin admin = Admin.create(props);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            AdminDriver d = new AdminDriver(admin);
            Json.emit(Json.obj("ev", "ready"));
            String line;
            while ((line = in.readLine()) != null) {
                line = line.trim();
                if (line.isEmpty())
                    continue;
                if (line.equals("quit"))
                    break;
                Object answer;
                try {
                    answer = Json.obj("ok", d.handle(line.split("\\s+")));
                } catch (Exception e) {
                    answer = Json.error(e);
                }
                Json.emit(answer);
            }
        }
        System.exit(0);
    }

    private static <T> T get(KafkaFuture<T> f) throws Exception {
        return f.get(60, TimeUnit.SECONDS);
    }

    /** The value of F, or its error as {"error":..}: for per-item results. */
    private static Object valueOrError(KafkaFuture<?> f, java.util.function.Function<Object, Object> fmt) {
        try {
            return fmt.apply(get(f));
        } catch (Exception e) {
            return Json.error(e);
        }
    }

    /** words "key=a,b" after the command, as a map key -> [a, b]. */
    private static Map<String, List<String>> options(String[] w, int from) {
        Map<String, List<String>> m = new HashMap<>();
        for (int i = from; i < w.length; i++) {
            int eq = w[i].indexOf('=');
            if (eq <= 0)
                throw new IllegalArgumentException("not key=value: " + w[i]);
            m.put(w[i].substring(0, eq), Arrays.asList(w[i].substring(eq + 1).split(",")));
        }
        return m;
    }

    private static Set<GroupState> states(List<String> names) {
        Set<GroupState> s = new HashSet<>();
        for (String n : names)
            s.add(GroupState.parse(n));
        return s;
    }

    private static Object listing(java.util.Collection<GroupListing> groups) {
        Map<String, Object> out = new TreeMap<>();
        for (GroupListing g : groups)
            out.put(g.groupId(), Json.obj("type", g.type().map(Object::toString), "protocol", g.protocol(),
                    "state", g.groupState().map(Object::toString), "simple", g.isSimpleConsumerGroup()));
        return out;
    }

    private static Object members(java.util.Collection<MemberDescription> ms) {
        List<Object> out = new ArrayList<>();
        for (MemberDescription m : ms)
            out.add(Json.obj("member", m.consumerId(), "instance", m.groupInstanceId(), "client", m.clientId(),
                    "host", m.host(), "assignment", Json.tps(m.assignment().topicPartitions()),
                    // ConsumerGroupDescribe v1's MemberType (KIP-1099): empty for a classic group
                    "upgraded", m.upgraded()));
        return out;
    }

    private static List<Object> nodeIds(List<Node> nodes) {
        List<Object> out = new ArrayList<>();
        for (Node n : nodes)
            out.add(n.id());
        return out;
    }

    @SuppressWarnings({"deprecation", "removal"}) // listConsumerGroups: the call 3.x clients make
    private Object handle(String[] w) throws Exception {
        switch (w[0]) {
        case "createTopics": {
            List<NewTopic> topics = new ArrayList<>();
            for (int i = 1; i < w.length; i++) {
                TopicPartition tp = Json.parseTp(w[i]);
                topics.add(new NewTopic(tp.topic(), tp.partition(), (short) 1));
            }
            get(admin.createTopics(topics).all());
            return null;
        }
        case "listGroups": {
            Map<String, List<String>> o = options(w, 1);
            ListGroupsOptions opts = new ListGroupsOptions();
            if (o.containsKey("types")) {
                Set<GroupType> t = new HashSet<>();
                for (String n : o.get("types"))
                    t.add(GroupType.parse(n));
                opts.withTypes(t);
            }
            if (o.containsKey("states"))
                opts.inGroupStates(states(o.get("states")));
            if (o.containsKey("protocolTypes"))
                opts.withProtocolTypes(new HashSet<>(o.get("protocolTypes")));
            return listing(get(admin.listGroups(opts).all()));
        }
        case "listConsumerGroups": {
            Map<String, List<String>> o = options(w, 1);
            ListConsumerGroupsOptions opts = new ListConsumerGroupsOptions();
            if (o.containsKey("states"))
                opts.inGroupStates(states(o.get("states")));
            Map<String, Object> out = new TreeMap<>();
            for (org.apache.kafka.clients.admin.ConsumerGroupListing g : get(admin.listConsumerGroups(opts).all()))
                out.put(g.groupId(), Json.obj("state", g.groupState().map(Object::toString),
                        "type", g.type().map(Object::toString), "simple", g.isSimpleConsumerGroup()));
            return out;
        }
        case "describeConsumerGroups": {
            Map<String, KafkaFuture<ConsumerGroupDescription>> r =
                    admin.describeConsumerGroups(Arrays.asList(w).subList(1, w.length)).describedGroups();
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<String, KafkaFuture<ConsumerGroupDescription>> e : r.entrySet())
                out.put(e.getKey(), valueOrError(e.getValue(), v -> {
                    ConsumerGroupDescription d = (ConsumerGroupDescription) v;
                    return Json.obj("simple", d.isSimpleConsumerGroup(), "assignor", d.partitionAssignor(),
                            "state", d.groupState().toString(), "type", d.type().toString(),
                            "coordinator", d.coordinator() == null ? null : d.coordinator().id(),
                            "members", members(d.members()));
                }));
            return out;
        }
        case "describeClassicGroups": {
            Map<String, KafkaFuture<ClassicGroupDescription>> r =
                    admin.describeClassicGroups(Arrays.asList(w).subList(1, w.length)).describedGroups();
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<String, KafkaFuture<ClassicGroupDescription>> e : r.entrySet())
                out.put(e.getKey(), valueOrError(e.getValue(), v -> {
                    ClassicGroupDescription d = (ClassicGroupDescription) v;
                    return Json.obj("protocol", d.protocol(), "protocolData", d.protocolData(),
                            "state", d.state().toString(), "members", members(d.members()));
                }));
            return out;
        }
        case "listConsumerGroupOffsets": {
            String group = w[1];
            List<TopicPartition> parts = new ArrayList<>();
            boolean requireStable = false;
            for (int i = 2; i < w.length; i++) {
                if (w[i].equals("requireStable"))
                    requireStable = true;
                else
                    parts.add(Json.parseTp(w[i]));
            }
            ListConsumerGroupOffsetsSpec spec = new ListConsumerGroupOffsetsSpec();
            if (!parts.isEmpty())
                spec.topicPartitions(parts);
            Map<TopicPartition, OffsetAndMetadata> r = get(admin.listConsumerGroupOffsets(Map.of(group, spec),
                    new ListConsumerGroupOffsetsOptions().requireStable(requireStable)).partitionsToOffsetAndMetadata(group));
            return Json.byTp(r, o -> o == null ? null
                    : Json.obj("offset", o.offset(), "metadata", o.metadata(), "leaderEpoch", o.leaderEpoch()));
        }
        case "listOffsets": {
            Map<TopicPartition, OffsetSpec> req = new HashMap<>();
            for (int i = 1; i < w.length; i++) {
                int eq = w[i].lastIndexOf('=');
                TopicPartition tp = Json.parseTp(w[i].substring(0, eq));
                String s = w[i].substring(eq + 1);
                req.put(tp, s.equals("earliest") ? OffsetSpec.earliest() : s.equals("latest") ? OffsetSpec.latest()
                        : s.equals("max") ? OffsetSpec.maxTimestamp() : OffsetSpec.forTimestamp(Long.parseLong(s)));
            }
            ListOffsetsResult r = admin.listOffsets(req);
            Map<String, Object> out = new TreeMap<>();
            for (TopicPartition tp : req.keySet())
                out.put(Json.tp(tp), valueOrError(r.partitionResult(tp), v -> {
                    ListOffsetsResult.ListOffsetsResultInfo info = (ListOffsetsResult.ListOffsetsResultInfo) v;
                    return Json.obj("offset", info.offset(), "timestamp", info.timestamp());
                }));
            return out;
        }
        case "alterConsumerGroupOffsets": {
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (int i = 2; i < w.length; i++) {
                int eq = w[i].lastIndexOf('=');
                String[] om = w[i].substring(eq + 1).split("/", 2);
                offsets.put(Json.parseTp(w[i].substring(0, eq)),
                        new OffsetAndMetadata(Long.parseLong(om[0]), om.length > 1 ? om[1] : ""));
            }
            var r = admin.alterConsumerGroupOffsets(w[1], offsets);
            Map<String, Object> out = new TreeMap<>();
            for (TopicPartition tp : offsets.keySet())
                out.put(Json.tp(tp), valueOrError(r.partitionResult(tp), v -> null));
            return out;
        }
        case "deleteConsumerGroups": {
            Map<String, KafkaFuture<Void>> r = admin.deleteConsumerGroups(Arrays.asList(w).subList(1, w.length)).deletedGroups();
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<String, KafkaFuture<Void>> e : r.entrySet())
                out.put(e.getKey(), valueOrError(e.getValue(), v -> null));
            return out;
        }
        case "deleteConsumerGroupOffsets": {
            Set<TopicPartition> parts = new HashSet<>();
            for (int i = 2; i < w.length; i++)
                parts.add(Json.parseTp(w[i]));
            DeleteConsumerGroupOffsetsResult r = admin.deleteConsumerGroupOffsets(w[1], parts);
            Map<String, Object> per = new TreeMap<>();
            for (TopicPartition tp : parts)
                per.put(Json.tp(tp), valueOrError(r.partitionResult(tp), v -> null));
            return Json.obj("all", valueOrError(r.all(), v -> null), "partitions", per);
        }
        case "removeMembersFromConsumerGroup": {
            RemoveMembersFromConsumerGroupOptions opts;
            List<MemberToRemove> members = new ArrayList<>();
            for (int i = 2; i < w.length; i++)
                members.add(new MemberToRemove(w[i]));
            opts = members.isEmpty() ? new RemoveMembersFromConsumerGroupOptions()
                    : new RemoveMembersFromConsumerGroupOptions(members);
            RemoveMembersFromConsumerGroupResult r = admin.removeMembersFromConsumerGroup(w[1], opts);
            Map<String, Object> per = new TreeMap<>();
            for (MemberToRemove m : members)
                per.put(m.toString(), valueOrError(r.memberResult(m), v -> null));
            return Json.obj("all", valueOrError(r.all(), v -> null), "members", per);
        }
        case "describeCluster": {
            DescribeClusterResult r = admin.describeCluster();
            List<Object> nodes = new ArrayList<>();
            for (Node n : get(r.nodes()))
                nodes.add(Json.obj("id", n.id(), "host", n.host(), "port", n.port(), "rack", n.rack()));
            nodes.sort((a, b) -> Integer.compare((Integer) ((Map<?, ?>) a).get("id"), (Integer) ((Map<?, ?>) b).get("id")));
            Node c = get(r.controller());
            return Json.obj("clusterId", get(r.clusterId()), "controller", c == null ? null : c.id(), "brokers", nodes);
        }
        case "createTopicsEach": {
            int from = 1;
            CreateTopicsOptions opts = new CreateTopicsOptions();
            if (w.length > 1 && w[1].equals("validateOnly")) {
                opts.validateOnly(true);
                from = 2;
            }
            List<NewTopic> topics = new ArrayList<>();
            for (int i = from; i < w.length; i++) {
                String[] parts = w[i].split("/");
                String[] spec = parts[0].split(":");
                int np = Integer.parseInt(spec[1]);
                short rf = Short.parseShort(spec[2]);
                NewTopic t = new NewTopic(spec[0], np < 0 ? Optional.empty() : Optional.of(np),
                        rf < 0 ? Optional.empty() : Optional.of(rf));
                Map<String, String> configs = new HashMap<>();
                for (int j = 1; j < parts.length; j++) {
                    int eq = parts[j].indexOf('=');
                    configs.put(parts[j].substring(0, eq), parts[j].substring(eq + 1));
                }
                topics.add(t.configs(configs));
            }
            Map<String, KafkaFuture<Void>> r = admin.createTopics(topics, opts).values();
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<String, KafkaFuture<Void>> e : r.entrySet())
                out.put(e.getKey(), valueOrError(e.getValue(), v -> null));
            return out;
        }
        case "deleteTopics": {
            Map<String, KafkaFuture<Void>> r = admin.deleteTopics(Arrays.asList(w).subList(1, w.length)).topicNameValues();
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<String, KafkaFuture<Void>> e : r.entrySet())
                out.put(e.getKey(), valueOrError(e.getValue(), v -> null));
            return out;
        }
        case "createPartitions": {
            int from = 1;
            CreatePartitionsOptions opts = new CreatePartitionsOptions();
            if (w.length > 1 && w[1].equals("validateOnly")) {
                opts.validateOnly(true);
                from = 2;
            }
            Map<String, NewPartitions> req = new HashMap<>();
            for (int i = from; i < w.length; i++) {
                int eq = w[i].lastIndexOf('=');
                req.put(w[i].substring(0, eq), NewPartitions.increaseTo(Integer.parseInt(w[i].substring(eq + 1))));
            }
            Map<String, KafkaFuture<Void>> r = admin.createPartitions(req, opts).values();
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<String, KafkaFuture<Void>> e : r.entrySet())
                out.put(e.getKey(), valueOrError(e.getValue(), v -> null));
            return out;
        }
        case "describeTopics": {
            Map<String, KafkaFuture<TopicDescription>> r =
                    admin.describeTopics(Arrays.asList(w).subList(1, w.length)).topicNameValues();
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<String, KafkaFuture<TopicDescription>> e : r.entrySet())
                out.put(e.getKey(), valueOrError(e.getValue(), v -> {
                    TopicDescription d = (TopicDescription) v;
                    List<Object> parts = new ArrayList<>();
                    for (TopicPartitionInfo p : d.partitions())
                        parts.add(Json.obj("partition", p.partition(), "leader", p.leader() == null ? null : p.leader().id(),
                                "replicas", nodeIds(p.replicas()), "isr", nodeIds(p.isr())));
                    return Json.obj("internal", d.isInternal(), "topicId", d.topicId().toString(), "partitions", parts);
                }));
            return out;
        }
        case "listTopics": {
            ListTopicsOptions opts = new ListTopicsOptions().listInternal(w.length > 1 && w[1].equals("internal"));
            return new ArrayList<>(new java.util.TreeSet<>(get(admin.listTopics(opts).names())));
        }
        case "describeConfigs": {
            List<ConfigResource> res = new ArrayList<>();
            for (int i = 1; i < w.length; i++) {
                int colon = w[i].indexOf(':');
                res.add(new ConfigResource(w[i].substring(0, colon).equals("topic") ? ConfigResource.Type.TOPIC
                        : ConfigResource.Type.BROKER, w[i].substring(colon + 1)));
            }
            Map<ConfigResource, KafkaFuture<Config>> r =
                    admin.describeConfigs(res, new DescribeConfigsOptions().includeDocumentation(true)).values();
            Map<String, Object> out = new TreeMap<>();
            for (ConfigResource cr : res)
                out.put((cr.type() == ConfigResource.Type.TOPIC ? "topic:" : "broker:") + cr.name(),
                        valueOrError(r.get(cr), v -> {
                            Map<String, Object> entries = new TreeMap<>();
                            for (ConfigEntry e : ((Config) v).entries())
                                entries.put(e.name(), Json.obj("value", e.value(), "source", e.source().toString(),
                                        "readOnly", e.isReadOnly(), "sensitive", e.isSensitive(),
                                        "type", e.type().toString(), "doc", e.documentation()));
                            return entries;
                        }));
            return out;
        }
        default:
            throw new IllegalArgumentException("unknown command " + w[0]);
        }
    }
}
