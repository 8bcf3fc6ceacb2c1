package main

// segmentio/kafka-go Reader with GroupID: no rebalance callbacks and no
// assignment to read (the tests take it from DescribeGroups); commits with
// CommitMessages, synchronous (CommitInterval 0).

import (
	"context"
	"errors"
	"fmt"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

type kafkaGoMember struct {
	st    *state
	r     *kafka.Reader
	dirty map[tp]int64 // read since their last commit: kafka-go tells no assignment,
	// so only these are committed (a partition read long ago may have moved)
}

func newKafkaGo(st *state) (client, error) {
	o := st.opts
	var bal kafka.GroupBalancer
	switch o.assignor {
	case "range":
		bal = kafka.RangeGroupBalancer{}
	case "roundrobin":
		bal = kafka.RoundRobinGroupBalancer{}
	default:
		return nil, fmt.Errorf("unknown assignor %q", o.assignor)
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{o.bootstrap}, GroupID: o.group, GroupTopics: o.topicList(),
		GroupBalancers: []kafka.GroupBalancer{bal}, StartOffset: kafka.FirstOffset,
		CommitInterval: 0, SessionTimeout: o.session(), HeartbeatInterval: o.heartbeat(),
		RebalanceTimeout: 10 * time.Second, MaxWait: 100 * time.Millisecond,
		WatchPartitionChanges: true, PartitionWatchInterval: 2 * time.Second,
		ErrorLogger: kafka.LoggerFunc(func(f string, a ...any) {
			emit("ERROR KAFKAGO %s", fmt.Sprintf(f, a...))
		}),
	})
	return &kafkaGoMember{st: st, r: r, dirty: map[tp]int64{}}, nil
}

func (m *kafkaGoMember) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	msg, err := m.r.FetchMessage(ctx)
	cancel()
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			emit("ERROR %s %v", errName(err), err)
		}
		return
	}
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	m.dirty[tp{msg.Topic, int32(msg.Partition)}] = msg.Offset + 1
	if m.st.record(msg.Topic, int32(msg.Partition), msg.Offset) {
		m.commitLocked(m.dirty)
		m.dirty = map[tp]int64{}
	}
}

// commitLocked commits next-offsets (kafka-go commits message offset + 1).
func (m *kafkaGoMember) commitLocked(offs map[tp]int64) {
	if len(offs) == 0 {
		return
	}
	var msgs []kafka.Message
	for x, o := range offs {
		msgs = append(msgs, kafka.Message{Topic: x.t, Partition: int(x.p), Offset: o - 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := m.r.CommitMessages(ctx, msgs...)
	printCommits(copyOffs(offs), func(tp) string {
		if err != nil {
			return errName(err)
		}
		return "NO_ERROR"
	})
}

func copyOffs(o map[tp]int64) map[tp]int64 {
	c := make(map[tp]int64, len(o))
	for k, v := range o {
		c[k] = v
	}
	return c
}

func (m *kafkaGoMember) commit(offs map[tp]int64) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if len(offs) == 0 { // commitpos: the member knows no assignment
		offs = m.dirty
		m.dirty = map[tp]int64{}
	}
	m.commitLocked(offs)
}

func (m *kafkaGoMember) committed(t string, ps []int32) (map[int32]int64, error) {
	cl := &kafka.Client{Addr: kafka.TCP(m.st.opts.bootstrap), Timeout: 20 * time.Second}
	var ips []int
	for _, p := range ps {
		ips = append(ips, int(p))
	}
	r, err := cl.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{
		GroupID: m.st.opts.group, Topics: map[string][]int{t: ips}})
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, p := range ps {
		out[p] = -1001
	}
	for _, x := range r.Topics[t] {
		if x.Error == nil && x.CommittedOffset >= 0 {
			out[int32(x.Partition)] = x.CommittedOffset
		}
	}
	return out, nil
}

func (m *kafkaGoMember) close() { m.r.Close() } // LeaveGroup
