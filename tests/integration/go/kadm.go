package main

// kadm: one franz-go admin call a run, its answer as one JSON line.
//
//	groups [STATE...]            ListGroups (with a state filter)
//	describe GROUP               DescribeGroups: state, protocol, members, assignments
//	offsets GROUP                FetchOffsets
//	lag GROUP                    Lag: commit, end and lag per partition
//	commit GROUP T P O [T P O..] CommitOffsets (an admin commit)
//	delete-offsets GROUP T P...  DeleteOffsets (OffsetDelete)
//	delete-group GROUP           DeleteGroups
//	list-offsets TOPIC           ListStartOffsets / ListEndOffsets / ListOffsetsAfterMilli(0)
// Errors are Kafka's error names ("" for none).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func ename(err error) string {
	if err == nil {
		return ""
	}
	return errName(err)
}

func tpKey(t string, p int32) string { return fmt.Sprintf("%s:%d", t, p) }

func kadmMain(args []string) error {
	fs := flag.NewFlagSet("kadm", flag.ContinueOnError)
	b := fs.String("b", "", "bootstrap")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a := fs.Args()
	if len(a) < 1 {
		return errors.New("kadm: command missing")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(*b))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out any
	switch a[0] {
	case "groups":
		gs, err := adm.ListGroups(ctx, a[1:]...)
		if err != nil {
			return err
		}
		res := map[string]any{}
		for _, g := range gs {
			res[g.Group] = map[string]any{"state": g.State, "protocol_type": g.ProtocolType,
				"coordinator": g.Coordinator}
		}
		out = res
	case "describe":
		ds, err := adm.DescribeGroups(ctx, a[1])
		if err != nil {
			return err
		}
		d := ds[a[1]]
		var members []any
		for _, m := range d.Members {
			var assigned [][]any
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					for _, p := range t.Partitions {
						assigned = append(assigned, []any{t.Topic, p})
					}
				}
			}
			var topics []string
			if c, ok := m.Join.AsConsumer(); ok {
				topics = c.Topics
			}
			inst := ""
			if m.InstanceID != nil {
				inst = *m.InstanceID
			}
			members = append(members, map[string]any{"member_id": m.MemberID, "instance_id": inst,
				"client_id": m.ClientID, "host": m.ClientHost, "assigned": assigned,
				"topics": topics})
		}
		out = map[string]any{"error": ename(d.Err), "state": d.State, "protocol_type": d.ProtocolType,
			"protocol": d.Protocol, "coordinator": d.Coordinator.NodeID, "members": members}
	case "offsets":
		os, err := adm.FetchOffsets(ctx, a[1])
		if err != nil {
			return err
		}
		res := map[string]any{}
		os.Each(func(o kadm.OffsetResponse) {
			res[tpKey(o.Topic, o.Partition)] = map[string]any{"offset": o.At, "error": ename(o.Err),
				"metadata": o.Metadata}
		})
		out = res
	case "lag":
		ls, err := adm.Lag(ctx, a[1])
		if err != nil {
			return err
		}
		l := ls[a[1]]
		res := map[string]any{}
		for t, ps := range l.Lag {
			for p, x := range ps {
				member := ""
				if x.Member != nil {
					member = x.Member.ClientID
				}
				res[tpKey(t, p)] = map[string]any{"commit": x.Commit.At, "end": x.End.Offset,
					"lag": x.Lag, "member": member, "error": ename(x.Err)}
			}
		}
		out = map[string]any{"state": l.State, "error": ename(l.Error()), "lag": res}
	case "commit":
		offs := kadm.Offsets{}
		for i := 2; i+2 < len(a); i += 3 {
			p, _ := strconv.Atoi(a[i+1])
			o, _ := strconv.ParseInt(a[i+2], 10, 64)
			offs.AddOffset(a[i], int32(p), o, -1)
		}
		rs, err := adm.CommitOffsets(ctx, a[1], offs)
		if err != nil {
			return err
		}
		res := map[string]any{}
		rs.Each(func(o kadm.OffsetResponse) { res[tpKey(o.Topic, o.Partition)] = ename(o.Err) })
		out = res
	case "delete-offsets":
		set := kadm.TopicsSet{}
		for i := 2; i+1 < len(a); i += 2 {
			p, _ := strconv.Atoi(a[i+1])
			set.Add(a[i], int32(p))
		}
		rs, err := adm.DeleteOffsets(ctx, a[1], set)
		if err != nil {
			return err
		}
		res := map[string]any{}
		for t, ps := range rs {
			for p, e := range ps {
				res[tpKey(t, p)] = ename(e)
			}
		}
		out = res
	case "delete-group":
		rs, err := adm.DeleteGroups(ctx, a[1])
		if err != nil {
			return err
		}
		out = map[string]any{"error": ename(rs[a[1]].Err)}
	case "list-offsets":
		res := map[string]any{}
		for name, f := range map[string]func(context.Context, ...string) (kadm.ListedOffsets, error){
			"start": adm.ListStartOffsets, "end": adm.ListEndOffsets,
			"after0": func(c context.Context, t ...string) (kadm.ListedOffsets, error) {
				return adm.ListOffsetsAfterMilli(c, 0, t...)
			}} {
			ls, err := f(ctx, a[1])
			if err != nil {
				return err
			}
			m := map[string]any{}
			ls.Each(func(o kadm.ListedOffset) {
				m[strconv.Itoa(int(o.Partition))] = map[string]any{"offset": o.Offset, "error": ename(o.Err)}
			})
			res[name] = m
		}
		out = res
	default:
		return fmt.Errorf("kadm: unknown command %q", a[0])
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
