// it-go-clients: the Go Kafka clients the integration tests drive against
// cohortd (twmb/franz-go with kadm, IBM/sarama, segmentio/kafka-go), built by
// tools/install-clients.sh into .deps/go/bin.
//
//	it-go-clients member -client franz|sarama|kafkago -b HOST:PORT -g GROUP -t T[,T...] [opts]
//	    one group consumer speaking c/group_consumer.c's line protocol on
//	    stdin/stdout (see member.go)
//	it-go-clients produce -client franz|sarama|kafkago -b HOST:PORT -t TOPIC -p NPARTS -n PER
//	    PER records into each partition (acks=all); prints "PRODUCED <n>"
//	it-go-clients kadm -b HOST:PORT COMMAND ARGS...
//	    one franz-go kadm call, its answer as one JSON line (see kadm.go)
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: it-go-clients member|produce|kadm ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "member":
		err = memberMain(os.Args[2:])
	case "produce":
		err = produceMain(os.Args[2:])
	case "kadm":
		err = kadmMain(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "it-go-clients:", err)
		os.Exit(1)
	}
}
