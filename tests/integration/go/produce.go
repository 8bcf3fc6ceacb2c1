package main

// produce: PER records into each of NPARTS partitions of TOPIC with one
// client's producer, acks=all, explicit partitions (key "<partition>-<i>").

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// keyPartition routes a kafka-go message by its key's "<partition>-" prefix.
type keyPartition struct{}

func (keyPartition) Balance(msg kafka.Message, partitions ...int) int {
	p, _ := strconv.Atoi(strings.SplitN(string(msg.Key), "-", 2)[0])
	return p
}

func produceMain(args []string) error {
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	which := fs.String("client", "", "franz, sarama or kafkago")
	b := fs.String("b", "", "bootstrap")
	topic := fs.String("t", "", "topic")
	nparts := fs.Int("p", 1, "partitions")
	per := fs.Int("n", 1, "records per partition")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	key := func(p, i int) string { return fmt.Sprintf("%d-%d", p, i) }
	n := 0
	switch *which {
	case "franz":
		cl, err := kgo.NewClient(kgo.SeedBrokers(*b), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			return err
		}
		defer cl.Close()
		var rs []*kgo.Record
		for p := 0; p < *nparts; p++ {
			for i := 0; i < *per; i++ {
				rs = append(rs, &kgo.Record{Topic: *topic, Partition: int32(p),
					Key: []byte(key(p, i)), Value: []byte("franz-go")})
			}
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			return err
		}
		n = len(rs)
	case "sarama":
		cfg := saramaConfig("it-sarama-producer")
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		pr, err := sarama.NewSyncProducer([]string{*b}, cfg)
		if err != nil {
			return err
		}
		defer pr.Close()
		var ms []*sarama.ProducerMessage
		for p := 0; p < *nparts; p++ {
			for i := 0; i < *per; i++ {
				ms = append(ms, &sarama.ProducerMessage{Topic: *topic, Partition: int32(p),
					Key: sarama.StringEncoder(key(p, i)), Value: sarama.StringEncoder("sarama")})
			}
		}
		if err := pr.SendMessages(ms); err != nil {
			return err
		}
		n = len(ms)
	case "kafkago":
		w := &kafka.Writer{Addr: kafka.TCP(*b), Topic: *topic, Balancer: keyPartition{},
			RequiredAcks: kafka.RequireAll, BatchTimeout: 10 * time.Millisecond}
		defer w.Close()
		var ms []kafka.Message
		for p := 0; p < *nparts; p++ {
			for i := 0; i < *per; i++ {
				ms = append(ms, kafka.Message{Key: []byte(key(p, i)), Value: []byte("kafka-go")})
			}
		}
		if err := w.WriteMessages(ctx, ms...); err != nil {
			return err
		}
		n = len(ms)
	default:
		return fmt.Errorf("unknown client %q", *which)
	}
	fmt.Printf("PRODUCED %d\n", n)
	return nil
}
