package main

// IBM/sarama ConsumerGroup: Setup / Cleanup of each session are its
// rebalance callbacks (sarama's protocol is eager: every session ends with
// all partitions revoked); MarkOffset + Commit for commits.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

type saramaMember struct {
	st     *state
	group  sarama.ConsumerGroup
	admin  sarama.ClusterAdmin
	cancel context.CancelFunc
	done   chan struct{}
	sessMu sync.Mutex
	sess   sarama.ConsumerGroupSession
}

func saramaConfig(name string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.ClientID = name
	cfg.Metadata.RefreshFrequency = 2 * time.Second
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	return cfg
}

func newSarama(st *state) (client, error) {
	o := st.opts
	cfg := saramaConfig(o.name)
	switch o.assignor {
	case "range":
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	case "roundrobin":
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRoundRobin()}
	case "sticky":
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategySticky()}
	default:
		return nil, fmt.Errorf("unknown assignor %q", o.assignor)
	}
	cfg.Consumer.Group.Session.Timeout = o.session()
	cfg.Consumer.Group.Heartbeat.Interval = o.heartbeat()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Consumer.Group.InstanceId = o.instance
	g, err := sarama.NewConsumerGroup([]string{o.bootstrap}, o.group, cfg)
	if err != nil {
		return nil, err
	}
	adm, err := sarama.NewClusterAdmin([]string{o.bootstrap}, saramaConfig(o.name+"-admin"))
	if err != nil {
		return nil, err
	}
	m := &saramaMember{st: st, group: g, admin: adm, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		for err := range g.Errors() {
			emit("ERROR %s %v", errName(err), err)
		}
	}()
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, o.topicList(), m); err != nil && ctx.Err() == nil {
				emit("ERROR %s Consume: %v", errName(err), err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return m, nil
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	m.sessMu.Lock()
	m.sess = s
	m.sessMu.Unlock()
	m.st.assigned(s.MemberID(), fromMap(s.Claims()))
	return nil
}

func (m *saramaMember) Cleanup(s sarama.ConsumerGroupSession) error {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	gone := fromMap(s.Claims())
	emit("REVOKED %s", plist(gone))
	if m.st.opts.commitOnRevoke {
		m.commitLocked(s, m.st.positions(gone))
	}
	m.sessMu.Lock()
	m.sess = nil
	m.sessMu.Unlock()
	m.st.drop(gone)
	emit("ASSIGNMENT %s %s", s.MemberID(), plist(m.st.assignment))
	return nil
}

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	// sarama's own example: stop at the end of the session even when
	// buffered messages remain (they belong to the next owner).
	for {
		select {
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			m.st.mu.Lock()
			if s.Context().Err() != nil {
				m.st.mu.Unlock()
				return nil
			}
			s.MarkMessage(msg, "")
			if m.st.record(msg.Topic, msg.Partition, msg.Offset) {
				m.commitLocked(s, m.st.positions(nil))
			}
			m.st.mu.Unlock()
		case <-s.Context().Done():
			return nil
		}
	}
}

// commitLocked commits synchronously (sarama reports commit errors only on
// its Errors channel, printed as ERROR lines; the COMMIT lines say NO_ERROR).
func (m *saramaMember) commitLocked(s sarama.ConsumerGroupSession, offs map[tp]int64) {
	if s == nil || len(offs) == 0 {
		return
	}
	for x, o := range offs {
		s.ResetOffset(x.t, x.p, o, "")
	}
	s.Commit()
	printCommits(offs, func(tp) string { return "NO_ERROR" })
}

func (m *saramaMember) poll() { time.Sleep(20 * time.Millisecond) }

func (m *saramaMember) commit(offs map[tp]int64) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	m.sessMu.Lock()
	s := m.sess
	m.sessMu.Unlock()
	m.commitLocked(s, offs)
}

func (m *saramaMember) committed(t string, ps []int32) (map[int32]int64, error) {
	r, err := m.admin.ListConsumerGroupOffsets(m.st.opts.group, map[string][]int32{t: ps})
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, p := range ps {
		out[p] = -1001
		if b := r.GetBlock(t, p); b != nil && b.Offset >= 0 {
			out[p] = b.Offset
		}
	}
	return out, nil
}

func (m *saramaMember) close() {
	m.cancel() // the session ends: Cleanup (commits with -R)
	<-m.done
	m.group.Close() // LeaveGroup
	m.admin.Close()
}
