"""librdkafka's C API (c/rdk_data.c) on the data path: an idempotent lz4
producer (InitProducerId + sequence checks), an assign()-ed consumer from
the beginning, offsets_for_times and watermarks."""
import os

import kwire
from harness import SKIP, BrokerTestCase, main, run


class LibrdkafkaData(BrokerTestCase):
    def test_data(self):
        with kwire.Conn(self.broker.port) as c:
            res = kwire.create_topics(c, [("rdk-data", 3, 1)], 4)
        self.assertEqual(res["topics"]["rdk-data"]["error_code"], 0, res)
        p = run([os.environ["RDK_DATA"], self.broker.bootstrap, "rdk-data", "50000"],
                timeout=180)
        print(p.stdout)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-3000:])
        self.broker.assert_alive()


if __name__ == "__main__":
    if not os.environ.get("RDK_DATA"):
        print("SKIP: RDK_DATA (the rdk_data binary) not set")
        raise SystemExit(SKIP)
    main()
