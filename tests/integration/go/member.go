package main

// The member side shared by the three clients: options, output lines,
// consumed positions and the stdin commands. Output (one event a line):
//
//	READY
//	ASSIGNED <member-id> <t:p,...>   ASSIGNMENT <member-id> <t:p,...>
//	REVOKED <t:p,...>                LOST <t:p,...>
//	MSG <topic> <partition> <offset> <usec>
//	COMMIT <topic> <partition> <offset> <error-name> <usec>
//	COMMITTED <topic> <partition> <offset>   (-1001: none)
//	ERROR <name> <reason>            FATAL <name> <reason>
//	CLOSED
//
// Commands: close, commit T P O, commitpos, committed T P..., exit.
// <usec> is CLOCK_MONOTONIC in microseconds, comparable across processes.

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

type tp struct {
	t string
	p int32
}

type memberOpts struct {
	client, bootstrap, group, topics, assignor, instance, name string
	sessionMs, commitEvery, delayMs                           int
	commitOnRevoke, quiet                                     bool
}

func (o *memberOpts) topicList() []string { return strings.Split(o.topics, ",") }
func (o *memberOpts) session() time.Duration {
	return time.Duration(o.sessionMs) * time.Millisecond
}
func (o *memberOpts) heartbeat() time.Duration {
	hb := o.sessionMs / 10
	if hb < 100 {
		hb = 100
	}
	return time.Duration(hb) * time.Millisecond
}

var outMu sync.Mutex

func emit(format string, args ...any) {
	outMu.Lock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
	outMu.Unlock()
}

func nowUs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Sec*1000000 + ts.Nsec/1000
}

func plist(s map[tp]bool) string {
	var v []string
	for x := range s {
		v = append(v, fmt.Sprintf("%s:%d", x.t, x.p))
	}
	if len(v) == 0 {
		return "-"
	}
	sort.Strings(v)
	return strings.Join(v, ",")
}

func fromMap(m map[string][]int32) map[tp]bool {
	s := map[tp]bool{}
	for t, ps := range m {
		for _, p := range ps {
			s[tp{t, p}] = true
		}
	}
	return s
}

// state is what every member keeps: its assignment as told by the client's
// callbacks and the next offset to read of each partition it consumed.
type state struct {
	mu          sync.Mutex
	opts        *memberOpts
	assignment  map[tp]bool
	pos         map[tp]int64
	sinceCommit int
}

func newState(o *memberOpts) *state {
	return &state{opts: o, assignment: map[tp]bool{}, pos: map[tp]int64{}}
}

// record notes one consumed record; true when a periodic commit is due.
func (s *state) record(t string, p int32, off int64) bool {
	if !s.opts.quiet {
		emit("MSG %s %d %d %d", t, p, off, nowUs())
	}
	s.pos[tp{t, p}] = off + 1
	if s.opts.delayMs > 0 {
		time.Sleep(time.Duration(s.opts.delayMs) * time.Millisecond)
	}
	s.sinceCommit++
	if s.opts.commitEvery > 0 && s.sinceCommit >= s.opts.commitEvery {
		s.sinceCommit = 0
		return true
	}
	return false
}

// positions of the given partitions (all assigned when nil) that were consumed.
func (s *state) positions(parts map[tp]bool) map[tp]int64 {
	if parts == nil {
		parts = s.assignment
	}
	out := map[tp]int64{}
	for x := range parts {
		if o, ok := s.pos[x]; ok {
			out[x] = o
		}
	}
	return out
}

func (s *state) assigned(member string, got map[tp]bool) {
	emit("ASSIGNED %s %s", member, plist(got))
	for x := range got {
		s.assignment[x] = true
		delete(s.pos, x) // a position is only valid while owned: a stale one must not be committed
	}
	emit("ASSIGNMENT %s %s", member, plist(s.assignment))
}

func (s *state) removed(kind, member string, gone map[tp]bool) {
	emit("%s %s", kind, plist(gone))
	s.drop(gone)
	emit("ASSIGNMENT %s %s", member, plist(s.assignment))
}

// drop forgets partitions taken away, with their positions.
func (s *state) drop(gone map[tp]bool) {
	for x := range gone {
		delete(s.assignment, x)
		delete(s.pos, x)
	}
}

func printCommits(offs map[tp]int64, errOf func(tp) string) {
	us := nowUs()
	keys := make([]tp, 0, len(offs))
	for x := range offs {
		keys = append(keys, x)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].t != keys[j].t {
			return keys[i].t < keys[j].t
		}
		return keys[i].p < keys[j].p
	})
	for _, x := range keys {
		emit("COMMIT %s %d %d %s %d", x.t, x.p, offs[x], errOf(x), us)
	}
}

// commands delivers stdin lines; "close" at EOF.
func commands() <-chan string {
	ch := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			ch <- strings.TrimSpace(sc.Text())
		}
		ch <- "close"
	}()
	return ch
}

// client is one library's group consumer.
type client interface {
	// poll consumes for a short while (the library's poll or fetch call).
	poll()
	commit(offs map[tp]int64)
	committed(t string, ps []int32) (map[int32]int64, error)
	close()
}

func memberMain(args []string) error {
	o := &memberOpts{}
	fs := flag.NewFlagSet("member", flag.ContinueOnError)
	fs.StringVar(&o.client, "client", "", "franz, sarama or kafkago")
	fs.StringVar(&o.bootstrap, "b", "", "bootstrap")
	fs.StringVar(&o.group, "g", "", "group")
	fs.StringVar(&o.topics, "t", "", "topics (^regex for franz)")
	fs.StringVar(&o.assignor, "a", "range", "assignor")
	fs.StringVar(&o.instance, "i", "", "group.instance.id")
	fs.StringVar(&o.name, "n", "go-member", "client id")
	fs.IntVar(&o.sessionMs, "s", 6000, "session timeout ms")
	fs.IntVar(&o.commitEvery, "P", 0, "commit every N records")
	fs.IntVar(&o.delayMs, "D", 0, "sleep ms after each record")
	fs.BoolVar(&o.commitOnRevoke, "R", false, "commit revoked partitions in the revoke callback")
	fs.BoolVar(&o.quiet, "q", false, "no MSG lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st := newState(o)
	var c client
	var err error
	switch o.client {
	case "franz":
		c, err = newFranz(st)
	case "sarama":
		c, err = newSarama(st)
	case "kafkago":
		c, err = newKafkaGo(st)
	default:
		err = fmt.Errorf("unknown client %q", o.client)
	}
	if err != nil {
		return err
	}
	emit("READY")
	cmds := commands()
	for {
		c.poll()
		select {
		case line := <-cmds:
			w := strings.Fields(line)
			if len(w) == 0 {
				continue
			}
			switch {
			case w[0] == "close":
				c.close()
				emit("CLOSED")
				return nil
			case w[0] == "exit":
				os.Exit(3)
			case w[0] == "commitpos":
				st.mu.Lock()
				offs := st.positions(nil)
				st.mu.Unlock()
				c.commit(offs)
			case w[0] == "commit" && len(w) == 4:
				p, _ := strconv.Atoi(w[2])
				off, _ := strconv.ParseInt(w[3], 10, 64)
				c.commit(map[tp]int64{{w[1], int32(p)}: off})
			case w[0] == "committed" && len(w) >= 3:
				var ps []int32
				for _, x := range w[2:] {
					p, _ := strconv.Atoi(x)
					ps = append(ps, int32(p))
				}
				got, err := c.committed(w[1], ps)
				if err != nil {
					emit("COMMITTED_ERROR %v", err)
					continue
				}
				for _, p := range ps {
					emit("COMMITTED %s %d %d", w[1], p, got[p])
				}
			default:
				emit("ERROR _INVALID_ARG unknown command %s", line)
			}
		default:
		}
	}
}
