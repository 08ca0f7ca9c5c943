package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/workbench"
)

// TestSIGTERMNeverAnswersNotAppliedForALandedWrite runs eight writers at
// once, over many rounds, and stops processes with SIGTERM at varied
// points while the other writers go on: `cairn workbench` processes over
// one local bucket; `cairn workbench --server` processes calling one
// `cairn serve`; and `cairn serve` replicas (two over one bucket, sharing
// one agent's head) that eight clients call. Every answer is then
// compared with what a fresh reader finds in the store: no answer that
// says a write was not applied (any error but UnknownOutcome) may belong
// to a write that landed, and no success to one that did not; no write
// lands twice.
func TestSIGTERMNeverAnswersNotAppliedForALandedWrite(t *testing.T) {
	bin := cairnBinary(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	t.Run("workbench", func(t *testing.T) {
		t.Parallel()
		o := newOutcomeRun(t, seed)
		for round := range sigRounds(t, 20) {
			o.workbenchRound(bin, round)
		}
		o.verify()
	})
	t.Run("remote", func(t *testing.T) {
		t.Parallel()
		o := newOutcomeRun(t, seed^0x7e40)
		srv := startServeProc(t, bin, t.TempDir(), nil, "--addr", "127.0.0.1:0", "--bucket", o.url)
		o.where = []string{"--server", srv.base}
		for round := range sigRounds(t, 10) {
			o.workbenchRound(bin, round)
		}
		o.verify()
	})
	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		o := newOutcomeRun(t, seed^0x5e4e)
		for round := range sigRounds(t, 12) {
			o.serveRound(bin, round)
		}
		o.verify()
	})
}

// sigRounds is the rounds of a run: n, or a quarter of it with -short.
func sigRounds(t *testing.T, n int) int {
	if testing.Short() {
		n = max(n/4, 2)
	}
	return n
}

// sigWriters is the number of writers of a round: half put a file of
// their own, half append a line to one file they share.
const sigWriters = 8

// answer classes.
const (
	ansApplied    = "applied"     // success
	ansUnknown    = "unknown"     // UnknownOutcome
	ansNotApplied = "not applied" // any other error result
	ansNone       = "no answer"   // the process or the connection went away first
)

// sigCall is one write and what its caller was told.
type sigCall struct {
	round, writer int
	path, line    string // put_file: path and its text; append: the shared path and the line
	appends       bool
	class, code   string
	out           string
}

type outcomeRun struct {
	t      *testing.T
	rng    *rand.Rand
	dir    string
	url    string
	where  []string // how `cairn workbench` reaches the store: --bucket URL or --server URL
	agent  string
	mu     sync.Mutex
	calls  []*sigCall
	rounds int
}

func newOutcomeRun(t *testing.T, seed uint64) *outcomeRun {
	dir := t.TempDir()
	url := "file://" + dir
	return &outcomeRun{t: t, rng: rand.New(rand.NewPCG(seed, 1)), dir: dir, url: url, where: []string{"--bucket", url}, agent: "sig"}
}

// writes returns the round's calls, one per writer.
func (o *outcomeRun) writes(round int) []*sigCall {
	var calls []*sigCall
	for w := range sigWriters {
		c := &sigCall{round: round, writer: w}
		if w%2 == 0 {
			c.path = fmt.Sprintf("r%03d/w%d.txt", round, w)
			c.line = fmt.Sprintf("round %d writer %d\n", round, w)
		} else {
			c.appends = true
			c.path = fmt.Sprintf("r%03d/shared.log", round)
			c.line = fmt.Sprintf("r%03d-w%d\n", round, w)
		}
		calls = append(calls, c)
	}
	return calls
}

func (c *sigCall) tool() string {
	if c.appends {
		return "workbench_append"
	}
	return "workbench_put_file"
}

func (c *sigCall) input() string {
	return fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"text":%q}`, c.path, c.line)
}

// classify sets c's class from the result the caller printed or was
// sent; empty means no answer.
func (c *sigCall) classify(out []byte) {
	c.out = strings.TrimSpace(string(out))
	var env struct{ Status, Code string }
	if c.out == "" || json.Unmarshal([]byte(c.out), &env) != nil {
		c.class = ansNone
		return
	}
	c.code = env.Code
	switch {
	case env.Status == "success":
		c.class = ansApplied
	case env.Code == workbench.CodeUnknownOutcome:
		c.class = ansUnknown
	default:
		c.class = ansNotApplied
	}
}

// workbenchRound starts one `cairn workbench` process per writer at once
// and sends SIGTERM to about half of them, each at its own moment up to
// 250 ms after the process began to read its input (so after it handles
// signals; a call alone takes some 60 ms); the others run to their end.
func (o *outcomeRun) workbenchRound(bin string, round int) {
	t := o.t
	if round == 0 {
		o.cli(bin, "workbench_create", `{"id":"wb"}`)
	}
	calls := o.writes(round)
	var wg sync.WaitGroup
	for _, c := range calls {
		term := o.rng.IntN(2) == 0
		delay := time.Duration(o.rng.Int64N(int64(250 * time.Millisecond)))
		wg.Go(func() {
			cmd := exec.Command(bin, append(append([]string{"workbench"}, o.where...), "--agent", o.agent, c.tool())...)
			cmd.Env = processEnv()
			// The input is padded past a pipe's buffer: the copy into the
			// pipe ends only once the process reads it.
			reading := make(chan struct{})
			cmd.Stdin = &eofNotice{r: strings.NewReader(c.input() + strings.Repeat(" ", 256<<10)), eof: reading}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			done := make(chan struct{})
			go func() {
				if !term {
					return
				}
				select {
				case <-reading:
				case <-done:
					return
				}
				select {
				case <-time.After(delay):
					cmd.Process.Signal(syscall.SIGTERM)
				case <-done:
				}
			}()
			kill := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
			err := cmd.Wait()
			close(done)
			kill.Stop()
			c.classify(stdout.Bytes())
			var ee *exec.ExitError
			switch {
			case c.class != ansNone:
			case errors.As(err, &ee) && ee.ExitCode() == exitStore:
				// Stopped before the call reached the store or the
				// server (exit 3, a message on standard error): not
				// applied, as an unusable bucket is.
				c.class, c.code = ansNotApplied, "exit 3"
			default:
				t.Errorf("round %d writer %d: no result, exit %v: %s", round, c.writer, err, stderr.String())
			}
		})
	}
	wg.Wait()
	o.add(calls)
}

// eofNotice reads r and closes eof when r is exhausted.
type eofNotice struct {
	r    io.Reader
	eof  chan struct{}
	once sync.Once
}

func (e *eofNotice) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}

// cli runs one tool to its end and fails the test unless it succeeds.
func (o *outcomeRun) cli(bin, tool, input string) {
	cmd := exec.Command(bin, append(append([]string{"workbench"}, o.where...), "--agent", o.agent, tool)...)
	cmd.Env = processEnv()
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		o.t.Fatalf("%s: %v: %s", tool, err, out)
	}
}

// serveRound starts two `cairn serve` replicas over the bucket; the eight
// writers post their calls to them alternately, and one replica gets
// SIGTERM at a moment in the first 300 ms. In one round of three its
// shutdown grace is 50 ms, so that calls still running when it ends are
// cut off rather than finished.
func (o *outcomeRun) serveRound(bin string, round int) {
	t := o.t
	grace := "30s"
	if round%3 == 2 {
		grace = "50ms"
	}
	var reps [2]*serveProc
	for i := range reps {
		reps[i] = startServeProc(t, bin, t.TempDir(), nil, "--addr", "127.0.0.1:0", "--bucket", o.url, "--shutdown-timeout", grace)
	}
	client := &http.Client{Timeout: 60 * time.Second}
	defer client.CloseIdleConnections()
	if round == 0 {
		r, err := post(client, reps[0].base+"/v1/agents/"+o.agent+"/tools/workbench_create", `{"id":"wb"}`)
		if err != nil || r.status != 200 {
			t.Fatalf("create: %v %d %s", err, r.status, r.body)
		}
	}
	victim := o.rng.IntN(2)
	delay := time.Duration(o.rng.Int64N(int64(300 * time.Millisecond)))
	calls := o.writes(round)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range calls {
		rep := reps[c.writer%2]
		wg.Go(func() {
			<-start
			r, err := post(client, rep.base+"/v1/agents/"+o.agent+"/tools/"+c.tool(), c.input())
			if err != nil {
				c.classify(nil)
				return
			}
			c.classify(r.body)
			if c.class == ansNone {
				t.Errorf("round %d writer %d: HTTP %d with no result: %s", round, c.writer, r.status, r.body)
			}
		})
	}
	close(start)
	time.Sleep(delay)
	reps[victim].cmd.Process.Signal(syscall.SIGTERM)
	wg.Wait()
	for _, p := range reps {
		p.stop(t)
	}
	select {
	case <-reps[victim].exited:
		if reps[victim].err != nil {
			t.Errorf("round %d: the replica stopped by SIGTERM exited with %v: %s", round, reps[victim].err, reps[victim].stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("round %d: the replica stopped by SIGTERM did not exit", round)
	}
	o.add(calls)
}

func (o *outcomeRun) add(calls []*sigCall) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, calls...)
	o.rounds++
}

// verify reads every path through a fresh Service over the bucket and
// compares what landed with what each caller was told.
func (o *outcomeRun) verify() {
	t := o.t
	if t.Failed() {
		return
	}
	ctx := context.Background()
	b, err := bucket.Open(ctx, o.url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	svc, err := workbench.Open(ctx, b, workbench.Options{AgentID: o.agent})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	read := func(path string) (string, bool) {
		out, ok := svc.Call(ctx, "workbench_read", []byte(fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"format":"bytes"}`, path)))
		var r struct {
			Code      string
			Bytes     []byte
			Truncated bool
		}
		if err := json.Unmarshal(out, &r); err != nil || r.Truncated {
			t.Fatalf("read %s: %s", path, out)
		}
		if !ok {
			if r.Code != workbench.CodeNotFound {
				t.Fatalf("read %s: %s", path, out)
			}
			return "", false
		}
		return string(r.Bytes), true
	}
	logs := map[string]string{}
	counts := map[string]int{}
	landedCount := map[string]int{}
	for _, c := range o.calls {
		n := 0
		if c.appends {
			text, seen := logs[c.path]
			if !seen {
				text, _ = read(c.path)
				logs[c.path] = text
			}
			n = strings.Count(text, c.line)
		} else if text, ok := read(c.path); ok {
			if text != c.line {
				t.Errorf("%s holds %q, want %q", c.path, text, c.line)
			}
			n = 1
		}
		if n > 1 {
			t.Errorf("round %d writer %d: %q landed %d times", c.round, c.writer, c.line, n)
		}
		landed := n > 0
		counts[c.class]++
		if landed {
			counts["landed"]++
			landedCount[c.class]++
		}
		switch {
		case landed && c.class == ansNotApplied:
			t.Errorf("round %d writer %d (%s): answered %s for a write that landed: %s", c.round, c.writer, c.tool(), c.code, c.out)
		case !landed && c.class == ansApplied:
			t.Errorf("round %d writer %d (%s): answered success for a write that did not land: %s", c.round, c.writer, c.tool(), c.out)
		}
	}
	codes := map[string]int{}
	for _, c := range o.calls {
		if c.class == ansNotApplied {
			codes[c.code]++
		}
	}
	t.Logf("%s: %d rounds, %d calls, %d landed; answered applied %d, unknown %d (%d landed), not applied %d (%d landed; codes %v), no answer %d (%d landed)",
		t.Name(), o.rounds, len(o.calls), counts["landed"], counts[ansApplied], counts[ansUnknown], landedCount[ansUnknown],
		counts[ansNotApplied], landedCount[ansNotApplied], codes, counts[ansNone], landedCount[ansNone])
}
