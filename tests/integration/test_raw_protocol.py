"""Every version of the issue-2 APIs, written by hand (kwire.py), against cohortd:
ApiVersions v0-v4, Metadata v0-v12, CreateTopics v0-v7, DeleteTopics v0-v6 (by
name and, v6, by topic id), DescribeCluster v0-v1. Expected values are Apache
Kafka's (single broker: leader = replicas = isr = this node)."""
import kwire
from harness import BrokerTestCase, main
from kwire import Conn

NUM_PARTITIONS = 3
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
INVALID_REQUEST_MESSAGE = (  # Kafka's Errors.INVALID_REQUEST default message
    "This most likely occurs because of a request being malformed by the client library or "
    "the message was sent to an incompatible broker. See the broker logs for more details.")


class RawProtocol(BrokerTestCase):
    broker_settings = {"num.partitions": str(NUM_PARTITIONS)}

    def setUp(self):
        self.c = Conn(self.broker.port)

    def tearDown(self):
        self.c.close()

    def node_id(self):
        md = kwire.metadata(self.c, 1, [])
        self.assertEqual(len(md["brokers"]), 1, md)
        return md["brokers"][0]["node_id"]

    def create(self, topics, version=4, validate_only=False):
        return kwire.create_topics(self.c, topics, version, validate_only)["topics"]

    def assert_created(self, name, partitions, version=4):
        res = self.create([(name, partitions, 1)], version)
        self.assertEqual(res[name]["error_code"], kwire.NONE, res)

    # ---------------------------------------------------------- ApiVersions
    def test_api_versions_all_versions(self):
        for v in range(0, 5):
            with self.subTest(version=v):
                av = kwire.api_versions(self.c, v)
                self.assertEqual(av["error_code"], 0)
                keys = av["api_keys"]
                want = {kwire.API_API_VERSIONS: (0, 4), kwire.API_METADATA: (0, 12)}
                for key, (lo, hi) in want.items():
                    self.assertIn(key, keys)
                    self.assertLessEqual(keys[key][0], lo, "api %d min" % key)
                    self.assertGreaterEqual(keys[key][1], hi, "api %d max" % key)
                for key in (kwire.API_CREATE_TOPICS, kwire.API_DELETE_TOPICS,
                            kwire.API_CREATE_PARTITIONS, kwire.API_DESCRIBE_CONFIGS,
                            kwire.API_DESCRIBE_CLUSTER):
                    self.assertIn(key, keys, "api %d not advertised" % key)
                    self.assertLessEqual(keys[key][0], keys[key][1])

    # ------------------------------------------------------------- Metadata
    def test_metadata_all_versions(self):
        self.assert_created("raw-md-a", 4)
        self.assert_created("raw-md-b", 1)
        node = self.node_id()
        ids = set()
        cluster_ids = set()
        for v in range(0, 13):
            with self.subTest(version=v):
                md = kwire.metadata(self.c, v, None)
                self.assertEqual(len(md["brokers"]), 1)
                b = md["brokers"][0]
                self.assertEqual(b["node_id"], node)
                self.assertEqual(b["host"], "127.0.0.1")
                self.assertEqual(b["port"], self.broker.port)
                if v >= 1:
                    self.assertIsNone(b["rack"])
                    self.assertEqual(md["controller_id"], node)
                if v >= 2:
                    self.assertTrue(md["cluster_id"], "empty cluster id")
                    cluster_ids.add(md["cluster_id"])
                for name, parts in (("raw-md-a", 4), ("raw-md-b", 1)):
                    self.assertIn(name, md["topics"])
                    t = md["topics"][name]
                    self.assertEqual(t["error_code"], 0)
                    if v >= 1:
                        self.assertFalse(t["is_internal"])
                    if v >= 10:
                        self.assertNotEqual(t["topic_id"], kwire.ZERO_UUID)
                        ids.add((name, t["topic_id"]))
                    self.assertEqual(sorted(p["partition"] for p in t["partitions"]),
                                     list(range(parts)))
                    for p in t["partitions"]:
                        self.assertEqual(p["error_code"], 0)
                        self.assertEqual(p["leader"], node)
                        self.assertEqual(p["replicas"], [node])
                        self.assertEqual(p["isr"], [node])
                        if v >= 5:
                            self.assertEqual(p["offline"], [])
        self.assertEqual(len(cluster_ids), 1, "cluster id changes between versions")
        self.assertEqual(len(ids), 2, "topic ids differ between versions: %r" % ids)

    def test_metadata_requested_topics(self):
        self.assert_created("raw-md-one", 2)
        for v in range(1, 13):
            with self.subTest(version=v):
                md = kwire.metadata(self.c, v, ["raw-md-one"], allow_auto=False)
                self.assertEqual(list(md["topics"]), ["raw-md-one"])
                self.assertEqual(len(md["topics"]["raw-md-one"]["partitions"]), 2)
                md = kwire.metadata(self.c, v, [], allow_auto=False)
                self.assertEqual(md["topic_list"], [], "an empty topic list means no topics")

    def test_metadata_unknown_topic_without_auto_create(self):
        for v in range(4, 13):
            with self.subTest(version=v):
                md = kwire.metadata(self.c, v, ["raw-no-such-topic"], allow_auto=False)
                t = md["topics"]["raw-no-such-topic"]
                self.assertEqual(t["error_code"], kwire.UNKNOWN_TOPIC_OR_PARTITION)
                self.assertEqual(t["partitions"], [])
                if v >= 10:
                    self.assertEqual(t["topic_id"], kwire.ZERO_UUID)

    def test_metadata_invalid_topic_names(self):
        for name in ("bad name!", "a/b", ".", "..", "x" * 250):
            for v in (1, 4, 12):
                with self.subTest(name=name[:20], version=v):
                    md = kwire.metadata(self.c, v, [name], allow_auto=True)
                    self.assertEqual(md["topics"][name]["error_code"],
                                     kwire.INVALID_TOPIC_EXCEPTION)

    def test_metadata_auto_create(self):
        for v in (1, 4, 9, 12):
            name = "raw-auto-v%d" % v
            with self.subTest(version=v):
                md = kwire.metadata(self.c, v, [name], allow_auto=True)
                self.assertIn(md["topics"][name]["error_code"],
                              (kwire.NONE, kwire.LEADER_NOT_AVAILABLE))
                md = kwire.metadata(self.c, v, [name], allow_auto=False)
                t = md["topics"][name]
                self.assertEqual(t["error_code"], 0)
                self.assertEqual(len(t["partitions"]), NUM_PARTITIONS,
                                 "auto-created topic should get num.partitions")

    # --------------------------------------------------------- CreateTopics
    def test_create_topics_all_versions(self):
        node = self.node_id()
        for v in range(0, 8):
            name = "raw-ct-v%d" % v
            with self.subTest(version=v):
                res = self.create([(name, 2, 1)], v)[name]
                self.assertEqual(res["error_code"], 0, res)
                if v >= 1:
                    self.assertIsNone(res["error_message"])
                if v >= 5:
                    self.assertEqual(res["num_partitions"], 2)
                    self.assertEqual(res["replication_factor"], 1)
                md = kwire.metadata(self.c, 12, [name], allow_auto=False)
                t = md["topics"][name]
                self.assertEqual(t["error_code"], 0)
                self.assertEqual(len(t["partitions"]), 2)
                self.assertEqual(t["partitions"][0]["leader"], node)
                if v >= 7:
                    self.assertEqual(res["topic_id"], t["topic_id"],
                                     "CreateTopics v7 topic id differs from Metadata's")
                again = self.create([(name, 2, 1)], v)[name]
                self.assertEqual(again["error_code"], kwire.TOPIC_ALREADY_EXISTS)

    def test_create_topics_defaults_with_minus_one(self):
        res = self.create([("raw-ct-defaults", -1, -1)], 4)["raw-ct-defaults"]
        self.assertEqual(res["error_code"], 0, res)
        md = kwire.metadata(self.c, 1, ["raw-ct-defaults"])
        self.assertEqual(len(md["topics"]["raw-ct-defaults"]["partitions"]), NUM_PARTITIONS)

    def test_create_topics_errors(self):
        long_ok = "l" * 249
        cases = [
            ("bad name!", 1, 1, kwire.INVALID_TOPIC_EXCEPTION),
            (".", 1, 1, kwire.INVALID_TOPIC_EXCEPTION),
            ("..", 1, 1, kwire.INVALID_TOPIC_EXCEPTION),
            ("", 1, 1, kwire.INVALID_TOPIC_EXCEPTION),
            ("x" * 250, 1, 1, kwire.INVALID_TOPIC_EXCEPTION),
            ("raw-rf3", 1, 3, kwire.INVALID_REPLICATION_FACTOR),
            ("raw-rf0", 1, 0, kwire.INVALID_REPLICATION_FACTOR),
            ("raw-rf-2", 1, -2, kwire.INVALID_REPLICATION_FACTOR),
            ("raw-p0", 0, 1, kwire.INVALID_PARTITIONS),
            ("raw-p-5", -5, 1, kwire.INVALID_PARTITIONS),
            (long_ok, 1, 1, kwire.NONE),
            ("Ok.name_with-all.chars9", 1, 1, kwire.NONE),
        ]
        for v in (1, 4, 7):
            for name, parts, rf, want in cases:
                if want == kwire.NONE:
                    name = name[:-2] + "v%d" % v
                with self.subTest(version=v, name=name[:20], partitions=parts, rf=rf):
                    res = self.create([(name, parts, rf)], v)
                    self.assertEqual(res[name]["error_code"], want, res[name])
                    if want != kwire.NONE and name.startswith("raw-"):
                        md = kwire.metadata(self.c, 4, [name], allow_auto=False)
                        self.assertNotEqual(md["topics"][name]["error_code"], 0,
                                            "a rejected topic was created")

    def test_create_topics_validate_only(self):
        res = self.create([("raw-validate", 3, 1)], 4, validate_only=True)
        self.assertEqual(res["raw-validate"]["error_code"], 0)
        md = kwire.metadata(self.c, 4, ["raw-validate"], allow_auto=False)
        self.assertEqual(md["topics"]["raw-validate"]["error_code"],
                         kwire.UNKNOWN_TOPIC_OR_PARTITION, "validate_only created the topic")
        res = self.create([("raw-validate", 3, 5)], 4, validate_only=True)
        self.assertEqual(res["raw-validate"]["error_code"], kwire.INVALID_REPLICATION_FACTOR)

    def test_create_topics_with_configs(self):
        cfg = {"cleanup.policy": "compact", "retention.ms": "1234567"}
        res = kwire.create_topics(self.c, [("raw-cfg", 1, 1, cfg)], 7)["topics"]["raw-cfg"]
        self.assertEqual(res["error_code"], 0, res)
        # v5+: Kafka returns the topic's configs with the result (KIP-525)
        for k, val in cfg.items():
            self.assertEqual(res["configs"].get(k), val,
                             "CreateTopics v7 result configs: %r" % res["configs"])

    def test_create_topics_invalid_configs(self):
        # Kafka: an unknown topic config name or a bad value is INVALID_CONFIG (40)
        for name, cfg in (("raw-badcfg-key", {"no.such.topic.config": "1"}),
                          ("raw-badcfg-val", {"retention.ms": "forever"}),
                          ("raw-badcfg-pol", {"cleanup.policy": "shred"})):
            with self.subTest(config=cfg):
                res = kwire.create_topics(self.c, [(name, 1, 1, cfg)], 4)["topics"][name]
                self.assertEqual(res["error_code"], 40, res)
                md = kwire.metadata(self.c, 4, [name], allow_auto=False)
                self.assertEqual(md["topics"][name]["error_code"], kwire.UNKNOWN_TOPIC_OR_PARTITION)

    def test_create_topics_several_in_one_request(self):
        res = self.create([("raw-multi-1", 1, 1), ("raw-multi-2", 5, -1),
                           ("bad/multi", 1, 1)], 4)
        self.assertEqual(res["raw-multi-1"]["error_code"], 0)
        self.assertEqual(res["raw-multi-2"]["error_code"], 0)
        self.assertEqual(res["bad/multi"]["error_code"], kwire.INVALID_TOPIC_EXCEPTION)
        md = kwire.metadata(self.c, 1, ["raw-multi-2"])
        self.assertEqual(len(md["topics"]["raw-multi-2"]["partitions"]), 5)

    def test_create_topics_duplicate_name_in_request(self):
        # Kafka answers INVALID_REQUEST for a topic named twice in one request
        res = kwire.create_topics(self.c, [("raw-dup", 1, 1), ("raw-dup", 1, 1)], 4)
        self.assertEqual(res["topics"]["raw-dup"]["error_code"], kwire.INVALID_REQUEST, res)

    # --------------------------------------------------------- DeleteTopics
    def test_delete_topics_by_name_all_versions(self):
        for v in range(0, 7):
            name = "raw-del-v%d" % v
            with self.subTest(version=v):
                self.assert_created(name, 2)
                res = kwire.delete_topics(self.c, [name], v)["results"]
                self.assertEqual(len(res), 1)
                self.assertEqual(res[0]["name"], name)
                self.assertEqual(res[0]["error_code"], 0, res)
                md = kwire.metadata(self.c, 4, [name], allow_auto=False)
                self.assertEqual(md["topics"][name]["error_code"],
                                 kwire.UNKNOWN_TOPIC_OR_PARTITION, "topic still there")
                res = kwire.delete_topics(self.c, [name], v)["results"]
                self.assertEqual(res[0]["error_code"], kwire.UNKNOWN_TOPIC_OR_PARTITION)

    def test_delete_topics_by_id(self):
        self.assert_created("raw-del-id", 3, version=7)
        md = kwire.metadata(self.c, 12, ["raw-del-id"], allow_auto=False)
        tid = md["topics"]["raw-del-id"]["topic_id"]
        self.assertNotEqual(tid, kwire.ZERO_UUID)
        res = kwire.delete_topics(self.c, [tid], 6)["results"]
        self.assertEqual(len(res), 1)
        self.assertEqual(res[0]["error_code"], 0, res)
        self.assertEqual(res[0]["topic_id"], tid)
        self.assertIn(res[0]["name"], ("raw-del-id", None))
        md = kwire.metadata(self.c, 12, ["raw-del-id"], allow_auto=False)
        self.assertEqual(md["topics"]["raw-del-id"]["error_code"],
                         kwire.UNKNOWN_TOPIC_OR_PARTITION)
        res = kwire.delete_topics(self.c, [tid], 6)["results"]
        self.assertEqual(res[0]["error_code"], kwire.UNKNOWN_TOPIC_ID, res)

    def test_recreated_topic_gets_new_id(self):
        self.assert_created("raw-recreate", 1, version=7)
        id1 = kwire.metadata(self.c, 12, ["raw-recreate"], False)["topics"]["raw-recreate"]["topic_id"]
        self.assertEqual(kwire.delete_topics(self.c, ["raw-recreate"], 6)["results"][0]["error_code"], 0)
        self.assert_created("raw-recreate", 2, version=7)
        t = kwire.metadata(self.c, 12, ["raw-recreate"], False)["topics"]["raw-recreate"]
        self.assertNotEqual(t["topic_id"], id1)
        self.assertEqual(len(t["partitions"]), 2)

    # ----------------------------------------------------- CreatePartitions
    def test_create_partitions_all_versions(self):
        for v in range(0, 4):
            name = "raw-cp-v%d" % v
            with self.subTest(version=v):
                self.assert_created(name, 2)
                res = kwire.create_partitions(self.c, {name: 5}, v)
                self.assertEqual(res[name][0], 0, res)
                md = kwire.metadata(self.c, 12, [name], allow_auto=False)
                parts = md["topics"][name]["partitions"]
                self.assertEqual(sorted(p["partition"] for p in parts), list(range(5)))
                for count in (5, 3):
                    res = kwire.create_partitions(self.c, {name: count}, v)
                    self.assertEqual(res[name][0], kwire.INVALID_PARTITIONS, (count, res))
                res = kwire.create_partitions(self.c, {name: 9}, v, validate_only=True)
                self.assertEqual(res[name][0], 0, res)
                md = kwire.metadata(self.c, 12, [name], allow_auto=False)
                self.assertEqual(len(md["topics"][name]["partitions"]), 5,
                                 "validate_only changed the partition count")
                res = kwire.create_partitions(self.c, {"raw-cp-nope": 3}, v)
                self.assertEqual(res["raw-cp-nope"][0], kwire.UNKNOWN_TOPIC_OR_PARTITION)

    # ------------------------------------------------------ DescribeConfigs
    def test_describe_configs_all_versions(self):
        res = kwire.create_topics(self.c, [("raw-dc", 1, 1, {"cleanup.policy": "compact"})], 4)
        self.assertEqual(res["topics"]["raw-dc"]["error_code"], 0)
        node = self.node_id()
        for v in range(0, 5):
            with self.subTest(version=v):
                out = kwire.describe_configs(self.c, [
                    (kwire.RESOURCE_TOPIC, "raw-dc", None),
                    (kwire.RESOURCE_TOPIC, "raw-dc", ["cleanup.policy"]),
                    (kwire.RESOURCE_BROKER, str(node), None),
                    (kwire.RESOURCE_TOPIC, "raw-dc-nope", None),
                ], v)
                self.assertEqual(len(out), 4, out)
                topic, one, broker, unknown = out
                self.assertEqual((topic["error_code"], topic["resource_type"], topic["resource_name"]),
                                 (0, kwire.RESOURCE_TOPIC, "raw-dc"), topic)
                self.assertIn("cleanup.policy", topic["configs"])
                e = topic["configs"]["cleanup.policy"]
                self.assertEqual(e["value"], "compact")
                if v == 0:
                    self.assertFalse(e["is_default"], "a topic override reported as default")
                else:
                    self.assertEqual(e["source"], kwire.CONFIG_SOURCE_TOPIC,
                                     "a topic override should have source DYNAMIC_TOPIC_CONFIG (1)")
                self.assertEqual(list(one["configs"]), ["cleanup.policy"])
                self.assertEqual((broker["error_code"], broker["resource_name"]), (0, str(node)))
                self.assertEqual(broker["configs"].get("num.partitions", {}).get("value"),
                                 str(NUM_PARTITIONS), broker["configs"].keys())
                self.assertEqual(unknown["error_code"], kwire.UNKNOWN_TOPIC_OR_PARTITION, unknown)

    def test_describe_configs_bad_resources(self):
        out = kwire.describe_configs(self.c, [
            (kwire.RESOURCE_TOPIC, "bad name!", None),
            (kwire.RESOURCE_BROKER, "999", None),
        ], 2)
        self.assertEqual(out[0]["error_code"], kwire.INVALID_TOPIC_EXCEPTION, out[0])
        # Kafka: "Unexpected broker id, expected N or empty string"
        self.assertEqual(out[1]["error_code"], kwire.INVALID_REQUEST, out[1])

    # ----------------------------------------------------- ApiVersions v3+
    def test_api_versions_invalid_client_software_name(self):
        # Kafka validates ClientSoftwareName/Version against
        # [a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])? and answers INVALID_REQUEST
        w = kwire.Writer(True)
        w.string("bad name!").string("1.0").tags()
        r = self.c.call(kwire.API_API_VERSIONS, 3, w.bytes())
        av = kwire.parse_api_versions(r, 3)
        self.assertEqual(av["error_code"], kwire.INVALID_REQUEST, av)

    # ------------------------------------------------- big requests/answers
    def test_large_requests_and_responses(self):
        names = ["raw-big-%04d-%s" % (i, "p" * 150) for i in range(500)]
        res = kwire.create_topics(self.c, [(n, 4, 1) for n in names], 7)["topics"]
        self.assertEqual(sorted(res), sorted(names))
        self.assertTrue(all(r["error_code"] == 0 for r in res.values()))
        md = kwire.metadata(self.c, 12, None, allow_auto=False)
        for n in names:
            self.assertEqual(len(md["topics"][n]["partitions"]), 4)
        md = kwire.metadata(self.c, 1, names, allow_auto=False)
        self.assertEqual(sorted(md["topics"]), sorted(names))
        res = kwire.delete_topics(self.c, names, 6)["results"]
        self.assertEqual(sorted(r["name"] for r in res), sorted(names))
        self.assertTrue(all(r["error_code"] == 0 for r in res))

    # ------------------------------------------------------ DescribeCluster
    def test_describe_cluster(self):
        md = kwire.metadata(self.c, 12, [])
        for v in (0, 1):
            with self.subTest(version=v):
                dc = kwire.describe_cluster(self.c, v)
                self.assertEqual(dc["error_code"], 0, dc)
                self.assertEqual(dc["cluster_id"], md["cluster_id"])
                self.assertEqual(dc["controller_id"], md["brokers"][0]["node_id"])
                self.assertEqual(len(dc["brokers"]), 1)
                b = dc["brokers"][0]
                self.assertEqual((b["broker_id"], b["host"], b["port"]),
                                 (md["brokers"][0]["node_id"], "127.0.0.1", self.broker.port))

    # ------------------------------------------- bytes after a request body
    # Kafka's generated readers (RequestContext.parseRequest ->
    # AbstractRequest.parseRequest -> XxxRequestData.read) read the fields of
    # the version, the tagged-field section when flexible, and never check
    # that the buffer is used up: trailing bytes are ignored for every API
    # and version. librdkafka >= 2.1 depends on it (next test).
    def trailing_cases(self):
        cases = [(kwire.API_API_VERSIONS, v, kwire.api_versions_body(v),
                  kwire.parse_api_versions) for v in (0, 3)]
        cases += [(kwire.API_METADATA, v, kwire.metadata_body(v, None, allow_auto=False),
                   kwire.parse_metadata) for v in (0, 1, 4, 8, 9, 12)]
        cases += [(kwire.API_FIND_COORDINATOR, v, kwire.find_coordinator_body(v, "raw-trail-g"),
                   kwire.parse_find_coordinator) for v in (0, 2, 3, 4, 6)]
        cases += [(kwire.API_LIST_GROUPS, v, kwire.list_groups_body(v),
                   kwire.parse_list_groups) for v in (0, 2, 3, 5)]
        cases += [(kwire.API_INIT_PRODUCER_ID, v, kwire.init_producer_id_body(v),
                   kwire.parse_init_producer_id) for v in (0, 1, 2, 4)]
        cases += [(kwire.API_CREATE_TOPICS, v,
                   kwire.create_topics_body(v, [("raw-trail-ct-v%d" % v, 1, 1)]),
                   kwire.parse_create_topics) for v in (4, 5, 7)]
        return cases

    def test_trailing_bytes_after_body_ignored(self):
        self.assert_created("raw-trail", 2)
        for junk in (b"\x00\x01\x02\x03", b"\xff" * 64):
            for api, v, body, parse in self.trailing_cases():
                with self.subTest(api=api, version=v, junk=len(junk)), Conn(self.broker.port) as c:
                    res = parse(c.call(api, v, body + junk), v)
                    if api == kwire.API_METADATA:
                        self.assertEqual(res["topics"]["raw-trail"]["error_code"], 0)
                        self.assertEqual(len(res["topics"]["raw-trail"]["partitions"]), 2)
                    elif api == kwire.API_FIND_COORDINATOR:
                        self.assertEqual([x["error_code"] for x in res], [0], res)
                    elif api == kwire.API_CREATE_TOPICS:
                        self.assertEqual([t["error_code"] for t in res["topics"].values()],
                                         [0 if junk[0] == 0 else kwire.TOPIC_ALREADY_EXISTS])
                    else:
                        self.assertEqual(res["error_code"], 0, res)
                    # the connection stays open and in step
                    self.assertEqual(kwire.api_versions(c, 0)["error_code"], 0)

    def test_librdkafka_all_topics_metadata_frames(self):
        """librdkafka >= 2.1 (rd_kafka_MetadataRequest0) writes the topic count
        of an all-topics request as an int32 0 even in flexible versions,
        where a one-byte compact count belongs; its own fields follow. Kafka
        reads 0x00 as a null topic array (all topics), the next zero bytes
        as AllowAutoTopicCreation / Include*AuthorizedOperations = false and
        an empty tagged-field section, and ignores the rest."""
        self.assert_created("raw-rdk-all", 3)
        frames = {
            # v12: count(4) AllowAutoTopicCreation IncludeTopicAuthorizedOperations tags
            12: b"\x00\x00\x00\x00" + b"\x01" + b"\x00" + b"\x00",
            # v9/v10: count(4) AllowAuto IncludeClusterAuthzOps IncludeTopicAuthzOps tags
            9: b"\x00\x00\x00\x00" + b"\x00" + b"\x00" + b"\x00" + b"\x00",
            10: b"\x00\x00\x00\x00" + b"\x00" + b"\x00" + b"\x00" + b"\x00",
        }
        for v, body in frames.items():
            with self.subTest(version=v), Conn(self.broker.port) as c:
                md = kwire.parse_metadata(c.call(kwire.API_METADATA, v, body), v)
                self.assertIn("raw-rdk-all", md["topics"], "an all-topics request")
                self.assertEqual(len(md["topics"]["raw-rdk-all"]["partitions"]), 3)
                md = kwire.metadata(c, v, None)  # same connection, still served
                self.assertIn("raw-rdk-all", md["topics"])

    # ----------------------------------------------------- FindCoordinator
    def test_find_coordinator_group_all_versions(self):
        node = self.node_id()
        for v in range(0, 7):
            keys = ["raw-fc-a"] if v < 4 else ["raw-fc-a", "raw-fc-b"]
            with self.subTest(version=v):
                res = kwire.find_coordinator(self.c, v, keys if v >= 4 else keys[0])
                self.assertEqual(len(res), len(keys))
                for i, c in enumerate(res):
                    self.assertEqual(c["error_code"], 0, c)
                    self.assertEqual((c["node_id"], c["host"], c["port"]),
                                     (node, "127.0.0.1", self.broker.port))
                    # Kafka: v1-v3 Errors.NONE.message() is "NONE"; v4+ ""
                    self.assertEqual(c["error_message"], {0: None}.get(v, "NONE" if v < 4 else ""))
                    if v >= 4:
                        self.assertEqual(c["key"], keys[i])

    def test_transactional_id_refused_alike(self):
        """cohort has no transaction coordinator. FindCoordinator for a
        transactional id (key type 1, v1+; v0 has no key type) and
        InitProducerId with one give the same fatal answer, the one Kafka
        gives when the transactional id may not be used:
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED (KafkaApis.getCoordinator and
        handleInitProducerIdRequest), with Node.noNode() (-1, "", -1) in
        FindCoordinator. COORDINATOR_NOT_AVAILABLE there made clients retry
        until their own timeout."""
        for v in range(1, 7):
            keys = ["raw-txn-a"] if v < 4 else ["raw-txn-a", "raw-txn-b", ""]
            with self.subTest(api="FindCoordinator", version=v):
                res = kwire.find_coordinator(self.c, v, keys if v >= 4 else keys[0],
                                             kwire.KEY_TYPE_TRANSACTION)
                self.assertEqual(len(res), len(keys))
                for i, c in enumerate(res):
                    self.assertEqual(c["error_code"], TRANSACTIONAL_ID_AUTHORIZATION_FAILED, c)
                    self.assertEqual((c["node_id"], c["host"], c["port"]), (-1, "", -1))
                    self.assertTrue(c["error_message"], c)
                    if v >= 4:
                        self.assertEqual(c["key"], keys[i])
        for v in range(0, 6):
            for txn in ("raw-txn-a", ""):
                with self.subTest(api="InitProducerId", version=v, txn=txn):
                    res = kwire.init_producer_id(self.c, v, txn)
                    self.assertEqual(res["error_code"], TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                    self.assertEqual((res["producer_id"], res["producer_epoch"]), (-1, -1))
            if v >= 3:  # checked before the producer id and epoch, as Kafka does
                res = kwire.init_producer_id(self.c, v, "raw-txn-a", producer_id=5,
                                             producer_epoch=-1)
                self.assertEqual(res["error_code"], TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        # the group side is not affected
        self.assertEqual(kwire.find_coordinator(self.c, 6, ["raw-txn-a"])[0]["error_code"], 0)

    def test_find_coordinator_unknown_key_type(self):
        # Kafka: INVALID_REQUEST for share keys (2) before v6 or without a
        # share coordinator, and for unknown types (CoordinatorType.forId)
        # (KafkaApis.getCoordinator); ErrorMessage as Apache Kafka 4.4.0 sends it:
        # Errors.message() at v1-v3 and when forId fails the request whole,
        # else "" at v4+
        for v, kt, whole in ((1, 2, True), (3, 3, True), (4, 2, False), (6, 2, False),
                             (4, 7, True), (6, 7, True)):
            with self.subTest(version=v, key_type=kt):
                res = kwire.find_coordinator(self.c, v, ["k", "l"] if v >= 4 else "k", kt)
                self.assertEqual([c["error_code"] for c in res],
                                 [kwire.INVALID_REQUEST] * (2 if v >= 4 else 1))
                for c in res:
                    self.assertEqual(c["error_message"], INVALID_REQUEST_MESSAGE if whole else "")
                    self.assertEqual((c["node_id"], c["host"], c["port"]), (-1, "", -1))


class NoAutoCreate(BrokerTestCase):
    broker_settings = {"auto.create.topics.enable": "false", "node.id": "7"}

    def test_metadata_does_not_create(self):
        with Conn(self.broker.port) as c:
            for v in (0, 1, 4, 12):
                with self.subTest(version=v):
                    md = kwire.metadata(c, v, ["raw-never"], allow_auto=True)
                    self.assertEqual(md["topics"]["raw-never"]["error_code"],
                                     kwire.UNKNOWN_TOPIC_OR_PARTITION)
                    self.assertEqual(md["brokers"][0]["node_id"], 7, "node.id=7 not used")


if __name__ == "__main__":
    main()
