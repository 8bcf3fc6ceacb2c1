package main

// twmb/franz-go (kgo) group consumer: OnPartitionsAssigned / Revoked / Lost
// callbacks, serialised with record processing by BlockRebalanceOnPoll;
// commits with CommitOffsetsSync (per-partition results).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type franzMember struct {
	st *state
	cl *kgo.Client
}

func franzBalancer(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	case "sticky":
		return kgo.StickyBalancer(), nil
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	}
	return nil, fmt.Errorf("unknown assignor %q", name)
}

func newFranz(st *state) (client, error) {
	o := st.opts
	bal, err := franzBalancer(o.assignor)
	if err != nil {
		return nil, err
	}
	m := &franzMember{st: st}
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.bootstrap), kgo.ClientID(o.name), kgo.ConsumerGroup(o.group),
		kgo.Balancers(bal), kgo.SessionTimeout(o.session()),
		kgo.HeartbeatInterval(o.heartbeat()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.BlockRebalanceOnPoll(),
		kgo.MetadataMinAge(500 * time.Millisecond), kgo.MetadataMaxAge(2 * time.Second),
		kgo.OnPartitionsAssigned(m.onAssigned), kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onLost),
	}
	if strings.HasPrefix(o.topics, "^") {
		opts = append(opts, kgo.ConsumeTopics(o.topics), kgo.ConsumeRegex())
	} else {
		opts = append(opts, kgo.ConsumeTopics(o.topicList()...))
	}
	if o.instance != "" {
		opts = append(opts, kgo.InstanceID(o.instance))
	}
	if os.Getenv("IT_GO_DEBUG") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	m.cl, err = kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (m *franzMember) member() string {
	id, _ := m.cl.GroupMetadata()
	if id == "" {
		return "-"
	}
	return id
}

func (m *franzMember) onAssigned(_ context.Context, _ *kgo.Client, a map[string][]int32) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	m.st.assigned(m.member(), fromMap(a))
}

func (m *franzMember) onRevoked(_ context.Context, _ *kgo.Client, r map[string][]int32) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	gone := fromMap(r)
	if len(gone) == 0 {
		return // franz calls this at every session end, also with nothing to revoke
	}
	emit("REVOKED %s", plist(gone))
	if m.st.opts.commitOnRevoke {
		m.commitLocked(m.st.positions(gone))
	}
	m.st.drop(gone)
	emit("ASSIGNMENT %s %s", m.member(), plist(m.st.assignment))
}

func (m *franzMember) onLost(_ context.Context, _ *kgo.Client, l map[string][]int32) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if gone := fromMap(l); len(gone) > 0 {
		m.st.removed("LOST", m.member(), gone)
	}
}

func errName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

// commitLocked commits synchronously and prints one COMMIT line a partition.
func (m *franzMember) commitLocked(offs map[tp]int64) {
	if len(offs) == 0 {
		return
	}
	req := map[string]map[int32]kgo.EpochOffset{}
	for x, o := range offs {
		if req[x.t] == nil {
			req[x.t] = map[int32]kgo.EpochOffset{}
		}
		req[x.t][x.p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	errs := map[tp]string{}
	var all error
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m.cl.CommitOffsetsSync(ctx, req, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest,
		resp *kmsg.OffsetCommitResponse, err error) {
		all = err
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
					errs[tp{t.Topic, p.Partition}] = errName(e)
				}
			}
		}
	})
	printCommits(offs, func(x tp) string {
		if all != nil {
			return errName(all)
		}
		if e, ok := errs[x]; ok {
			return e
		}
		return "NO_ERROR"
	})
}

func (m *franzMember) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	fs := m.cl.PollRecords(ctx, 10) // small polls: rebalances wait for AllowRebalance
	cancel()
	m.st.mu.Lock()
	fs.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			emit("ERROR %s %s/%d: %v", errName(err), t, p, err)
		}
	})
	due := false
	fs.EachRecord(func(r *kgo.Record) {
		if m.st.record(r.Topic, r.Partition, r.Offset) {
			due = true
		}
	})
	if due {
		m.commitLocked(m.st.positions(nil))
	}
	m.st.mu.Unlock()
	m.cl.AllowRebalance()
}

func (m *franzMember) commit(offs map[tp]int64) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	m.commitLocked(offs)
}

func (m *franzMember) committed(t string, ps []int32) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(m.cl).FetchOffsets(ctx, m.st.opts.group)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, p := range ps {
		out[p] = -1001
		if r, ok := resp.Lookup(t, p); ok && r.Err == nil {
			out[p] = r.At
		}
	}
	return out, nil
}

func (m *franzMember) close() {
	m.cl.CloseAllowingRebalance() // revokes (committing with -R), then LeaveGroup
}
