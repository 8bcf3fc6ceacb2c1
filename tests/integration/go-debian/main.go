// it-go-debian: Debian 12's old Go Kafka clients against a broker: Shopify
// sarama 1.22.1 and segmentio kafka-go 0.2.1 (golang-github-shopify-sarama-dev,
// golang-github-segmentio-kafka-go-dev), which speak message format v0/v1
// (Produce v0-v2, Fetch v0-v3). Built by tools/install-debian-go.sh in GOPATH
// mode from /usr/share/gocode with Debian's Go, apart from the module-proxy
// clients of tests/integration/go.
//
//	it-go-debian sarama-produce -b HOST:PORT -t TOPIC -p PART -n N [-codec C] [-version V] [-size S] [-ts MS] [-one]
//	    SyncProducer, N messages "k<i>"/"v<i>..." to one partition (-ts: their
//	    timestamp, for magic 1; -one: all in one request, so that what the
//	    broker stores does not depend on timing); prints "OFFSET <i> <offset>"
//	    for each, then "PRODUCED <n>"
//	it-go-debian sarama-consume -b HOST:PORT -t TOPIC -p PART -n N [-offset O] [-version V] [-wait S]
//	    a partition consumer from O (-2 oldest) for at most S seconds (90);
//	    "MSG <p> <offset> <key> <value-length> <timestamp-ms>"
//	it-go-debian sarama-commit -b HOST:PORT -g GROUP -t TOPIC -p PART -o OFFSET
//	    OffsetManager: commits OFFSET with metadata, reads it back with a
//	    new manager; prints "COMMITTED <offset> <metadata>"
//	it-go-debian sarama-group -b HOST:PORT -g GROUP -t TOPIC -n N -version V
//	    ConsumerGroup (needs V >= 0.10.2.0) reading until N distinct
//	    messages, marking each; "MSG ..." lines, then "DONE"
//	it-go-debian kafkago-write -b HOST:PORT -t TOPIC -n N [-codec C] [-size S]
//	    Writer (its partition balancer); "PRODUCED <n>"
//	it-go-debian kafkago-read -b HOST:PORT -t TOPIC -p PART -n N
//	    a partition Reader from the first offset; "MSG ..." lines
//	it-go-debian kafkago-group -b HOST:PORT -g GROUP -t TOPIC -n N -m MEMBERS
//	    MEMBERS Readers with the GroupID fetch and commit (CommitMessages)
//	    until N distinct messages were read; "MSG ..." lines, then "DONE"
//
// Message i is key "k<i>", value "v<i>" padded with '.' to -size bytes; the
// Python side checks what comes back. Sizes and codecs: none, gzip, snappy,
// lz4.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
	kafka "github.com/segmentio/kafka-go"
	kgzip "github.com/segmentio/kafka-go/gzip"
	klz4 "github.com/segmentio/kafka-go/lz4"
	ksnappy "github.com/segmentio/kafka-go/snappy"
)

type opts struct {
	bootstrap, topic, group, codec, version string
	part, n, size, members, wait            int
	offset, ts                              int64
	one                                     bool
}

func value(i, size int) []byte {
	v := fmt.Sprintf("v%d", i)
	if len(v) < size {
		v += strings.Repeat(".", size-len(v))
	}
	return []byte(v)
}

var outMu sync.Mutex

func emit(format string, a ...interface{}) {
	outMu.Lock()
	fmt.Printf(format+"\n", a...)
	outMu.Unlock()
}

func saramaConfig(o *opts) (*sarama.Config, error) {
	c := sarama.NewConfig() // the default: Version 0.8.2.0 (Produce v0, Fetch v0, magic 0)
	if o.version != "" {
		v, err := sarama.ParseKafkaVersion(o.version)
		if err != nil {
			return nil, err
		}
		c.Version = v
	}
	switch o.codec {
	case "", "none":
	case "gzip":
		c.Producer.Compression = sarama.CompressionGZIP
	case "snappy":
		c.Producer.Compression = sarama.CompressionSnappy
	case "lz4":
		c.Producer.Compression = sarama.CompressionLZ4
	default:
		return nil, fmt.Errorf("unknown codec %q", o.codec)
	}
	return c, nil
}

func saramaProduce(o *opts) error {
	c, err := saramaConfig(o)
	if err != nil {
		return err
	}
	c.Producer.Return.Successes = true // a SyncProducer needs it
	c.Producer.Partitioner = sarama.NewManualPartitioner
	if o.one {
		c.Producer.Flush.Messages = o.n
		c.Producer.Flush.Frequency = 10 * time.Second
	}
	p, err := sarama.NewSyncProducer([]string{o.bootstrap}, c)
	if err != nil {
		return err
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, o.n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: o.topic, Partition: int32(o.part),
			Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.ByteEncoder(value(i, o.size))}
		if o.ts > 0 {
			msgs[i].Timestamp = time.Unix(0, o.ts*int64(time.Millisecond))
		}
	}
	if err := p.SendMessages(msgs); err != nil {
		return err
	}
	for i, m := range msgs {
		emit("OFFSET %d %d", i, m.Offset)
	}
	emit("PRODUCED %d", o.n)
	return nil
}

func printMsg(p int32, off int64, key, val []byte, ts time.Time) {
	ms := int64(-1)
	if !ts.IsZero() {
		ms = ts.UnixNano() / int64(time.Millisecond)
	}
	emit("MSG %d %d %s %d %d", p, off, string(key), len(val), ms)
}

func saramaConsume(o *opts) error {
	c, err := saramaConfig(o)
	if err != nil {
		return err
	}
	cons, err := sarama.NewConsumer([]string{o.bootstrap}, c)
	if err != nil {
		return err
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(o.topic, int32(o.part), o.offset)
	if err != nil {
		return err
	}
	defer pc.Close()
	deadline := time.After(time.Duration(o.wait) * time.Second)
	for i := 0; i < o.n; i++ {
		select {
		case m := <-pc.Messages():
			printMsg(m.Partition, m.Offset, m.Key, m.Value, m.Timestamp)
		case e := <-pc.Errors():
			return e
		case <-deadline:
			return fmt.Errorf("timed out after %d of %d messages", i, o.n)
		}
	}
	return nil
}

func saramaCommit(o *opts) error {
	c, err := saramaConfig(o)
	if err != nil {
		return err
	}
	for round := 0; round < 2; round++ {
		cl, err := sarama.NewClient([]string{o.bootstrap}, c)
		if err != nil {
			return err
		}
		om, err := sarama.NewOffsetManagerFromClient(o.group, cl)
		if err != nil {
			return err
		}
		pom, err := om.ManagePartition(o.topic, int32(o.part))
		if err != nil {
			return err
		}
		if round == 0 {
			pom.MarkOffset(o.offset, "meta-from-sarama")
		} else {
			off, meta := pom.NextOffset()
			emit("COMMITTED %d %s", off, meta)
		}
		go func() {
			for e := range pom.Errors() {
				emit("ERROR %v", e)
			}
		}()
		if err := pom.Close(); err != nil {
			return err
		}
		if err := om.Close(); err != nil { // commits what was marked
			return err
		}
		cl.Close()
	}
	return nil
}

type groupHandler struct {
	o    *opts
	mu   sync.Mutex
	seen map[string]bool
	done chan struct{}
	once sync.Once
}

func (h *groupHandler) Setup(s sarama.ConsumerGroupSession) error   { return nil }
func (h *groupHandler) Cleanup(s sarama.ConsumerGroupSession) error { return nil }
func (h *groupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	for m := range cl.Messages() {
		printMsg(m.Partition, m.Offset, m.Key, m.Value, m.Timestamp)
		s.MarkMessage(m, "")
		h.mu.Lock()
		h.seen[fmt.Sprintf("%d/%d", m.Partition, m.Offset)] = true
		if len(h.seen) >= h.o.n {
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
	}
	return nil
}

func saramaGroup(o *opts) error {
	c, err := saramaConfig(o)
	if err != nil {
		return err
	}
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Return.Errors = true
	g, err := sarama.NewConsumerGroup([]string{o.bootstrap}, o.group, c)
	if err != nil {
		return err
	}
	h := &groupHandler{o: o, seen: map[string]bool{}, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for e := range g.Errors() {
			emit("ERROR %v", e)
		}
	}()
	go func() {
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{o.topic}, h); err != nil {
				emit("ERROR %v", err)
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	select {
	case <-h.done:
	case <-time.After(120 * time.Second):
		cancel()
		return fmt.Errorf("timed out with %d of %d messages", len(h.seen), o.n)
	}
	cancel()
	if err := g.Close(); err != nil { // commits the marked offsets
		return err
	}
	emit("DONE")
	return nil
}

func kafkagoCodec(name string) (kafka.CompressionCodec, error) {
	switch name {
	case "", "none":
		return nil, nil
	case "gzip":
		return kgzip.NewCompressionCodec(), nil
	case "snappy":
		return ksnappy.NewCompressionCodec(), nil
	case "lz4":
		return klz4.NewCompressionCodec(), nil
	}
	return nil, fmt.Errorf("unknown codec %q", name)
}

func kafkagoWrite(o *opts) error {
	codec, err := kafkagoCodec(o.codec)
	if err != nil {
		return err
	}
	w := kafka.NewWriter(kafka.WriterConfig{Brokers: []string{o.bootstrap}, Topic: o.topic,
		Balancer: &kafka.RoundRobin{}, CompressionCodec: codec, BatchSize: 50,
		BatchTimeout: 10 * time.Millisecond})
	defer w.Close()
	msgs := make([]kafka.Message, o.n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: value(i, o.size)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return err
	}
	emit("PRODUCED %d", o.n)
	return nil
}

func kafkagoRead(o *opts) error {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{o.bootstrap}, Topic: o.topic,
		Partition: o.part, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := 0; i < o.n; i++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return err
		}
		printMsg(int32(m.Partition), m.Offset, m.Key, m.Value, m.Time)
	}
	return nil
}

func kafkagoGroup(o *opts) error {
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var readers []*kafka.Reader
	for i := 0; i < o.members; i++ {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{o.bootstrap}, GroupID: o.group,
			Topic: o.topic, MaxWait: 200 * time.Millisecond, SessionTimeout: 6 * time.Second,
			HeartbeatInterval: 500 * time.Millisecond, RebalanceTimeout: 10 * time.Second})
		readers = append(readers, r)
		wg.Add(1)
		go func(r *kafka.Reader) {
			defer wg.Done()
			for ctx.Err() == nil {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					if ctx.Err() == nil {
						emit("ERROR fetch: %v", err)
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				printMsg(int32(m.Partition), m.Offset, m.Key, m.Value, m.Time)
				if err := r.CommitMessages(ctx, m); err != nil && ctx.Err() == nil {
					emit("ERROR commit: %v", err)
				}
				mu.Lock()
				seen[fmt.Sprintf("%d/%d", m.Partition, m.Offset)] = true
				if len(seen) >= o.n {
					once.Do(func() { close(done) })
				}
				mu.Unlock()
			}
		}(r)
	}
	var err error
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		err = fmt.Errorf("timed out with %d of %d messages", len(seen), o.n)
	}
	cancel()
	wg.Wait()
	for _, r := range readers {
		r.Close() // LeaveGroup
	}
	if err == nil {
		emit("DONE")
	}
	return err
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: it-go-debian COMMAND [options]")
		os.Exit(2)
	}
	o := &opts{}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	fs.StringVar(&o.bootstrap, "b", "", "bootstrap HOST:PORT")
	fs.StringVar(&o.topic, "t", "", "topic")
	fs.StringVar(&o.group, "g", "", "group")
	fs.StringVar(&o.codec, "codec", "none", "none, gzip, snappy or lz4")
	fs.StringVar(&o.version, "version", "", "sarama's Config.Version (default: its default)")
	fs.IntVar(&o.part, "p", 0, "partition")
	fs.IntVar(&o.n, "n", 10, "messages")
	fs.IntVar(&o.size, "size", 0, "value size")
	fs.IntVar(&o.members, "m", 2, "group members")
	fs.IntVar(&o.wait, "wait", 90, "seconds to wait for the messages")
	fs.BoolVar(&o.one, "one", false, "sarama-produce: all messages in one request")
	fs.Int64Var(&o.ts, "ts", 0, "message timestamp, ms (0: the producer's)")
	fs.Int64Var(&o.offset, "o", -2, "offset")
	fs.Int64Var(&o.offset, "offset", -2, "offset")
	fs.Parse(os.Args[2:])
	cmds := map[string]func(*opts) error{
		"sarama-produce": saramaProduce, "sarama-consume": saramaConsume,
		"sarama-commit": saramaCommit, "sarama-group": saramaGroup,
		"kafkago-write": kafkagoWrite, "kafkago-read": kafkagoRead,
		"kafkago-group": kafkagoGroup,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "it-go-debian: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := f(o); err != nil {
		fmt.Fprintln(os.Stderr, "it-go-debian:", err)
		os.Exit(1)
	}
}
