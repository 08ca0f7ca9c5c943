package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// The first write of an agent, killed from outside: a process making a
// new agent's first workbench_create is killed (SIGKILL) at a random
// moment, 0 to 80 ms into the call, and a fresh process must then create,
// write and read back in that agent. The first write creates the genesis
// head before it stages anything, so the kill leaves nothing, a genesis
// head or a committed head; never objects without a head, which would
// brick the agent (ObjectUnavailable on every call). docs/engine.md,
// section 4, holds the table these print:
//
//	go test ./cmd/cairn -run TestFirstWriteKill -v

// Agents per variant, and per serve process killed.
const (
	fwAgents         = 100
	fwAgentsPerServe = 10
	fwMaxDelay       = 80 * time.Millisecond
)

// fwTally is what the kills left and whether the agents stayed usable.
type fwTally struct {
	mu    sync.Mutex
	acked int             // first creates answered success before the kill
	took  []time.Duration // how long those took
	// What the kill left: nothing, a genesis head, the schema record's
	// commit (sequence 1), the workbench created (2 or more), or objects
	// without a head.
	nothing, genesis, schema, created, noHead int
	usable, unusable                          int
	unusableAgents                            []string
}

func (f *fwTally) String() string {
	slices.Sort(f.took)
	median := time.Duration(0)
	if len(f.took) > 0 {
		median = f.took[len(f.took)/2]
	}
	return fmt.Sprintf("%d agents, killed 0-%v into the first workbench_create: %d answered before the kill (median %v); left %d nothing, %d genesis head, %d schema commit only, %d workbench created, %d objects without a head; usable after %d, unusable %d",
		f.nothing+f.genesis+f.schema+f.created+f.noHead, fwMaxDelay, f.acked, median.Round(time.Millisecond),
		f.nothing, f.genesis, f.schema, f.created, f.noHead, f.usable, f.unusable)
}

func (f *fwTally) answered(took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acked++
	f.took = append(f.took, took)
}

// classify reads agent's head as the kill left it.
func (f *fwTally) classify(t *testing.T, b bucket.Bucket, agent string) {
	t.Helper()
	ctx := context.Background()
	layout, err := workbench.Layout(agent)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := head.ReadHead(ctx, b, layout, *workbench.SweepOptions().Marker)
	switch {
	case errors.Is(err, head.ErrNoHead):
		written, lerr := head.HasObjects(ctx, b, layout)
		if lerr != nil {
			t.Fatal(lerr)
		}
		if written {
			f.noHead++
			t.Errorf("agent %s: objects but no head after the kill", agent)
		} else {
			f.nothing++
		}
	case err != nil:
		t.Errorf("agent %s: head after the kill: %v", agent, err)
	case h.Genesis():
		f.genesis++
	case h.Sequence == 1:
		f.schema++
	default:
		f.created++
	}
}

func (f *fwTally) judge(agent string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok {
		f.usable++
	} else {
		f.unusable++
		f.unusableAgents = append(f.unusableAgents, agent)
	}
}

// TestFirstWriteKill runs both variants: `cairn serve` replicas killed
// under a new agent's first workbench_create, and `cairn workbench
// workbench_create` processes killed.
func TestFirstWriteKill(t *testing.T) {
	bin := cairnBinary(t)
	t.Run("serve", func(t *testing.T) { fwServe(t, bin) })
	t.Run("cli", func(t *testing.T) { fwCLI(t, bin) })
}

// fwServe starts a `cairn serve` process, sends fwAgentsPerServe new
// agents' first workbench_create to it so that each is in flight for a
// random 0-80 ms when the process is killed, and starts another; then a
// fresh serve process creates, writes and reads back in every agent.
func fwServe(t *testing.T, bin string) {
	start := time.Now()
	dir := t.TempDir()
	url := "file://" + dir
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	tally := &fwTally{}
	var agents []string
	for run := 0; len(agents) < fwAgents; run++ {
		p := startServeProc(t, bin, t.TempDir(), nil, "--addr", "127.0.0.1:0", "--bucket", url)
		kill := time.Now().Add(fwMaxDelay + 5*time.Millisecond)
		var wg sync.WaitGroup
		for i := range fwAgentsPerServe {
			agent := fmt.Sprintf("fw-serve-%03d", run*fwAgentsPerServe+i)
			agents = append(agents, agent)
			d := time.Duration(rand.Int64N(int64(fwMaxDelay) + 1))
			wg.Go(func() {
				time.Sleep(time.Until(kill.Add(-d)))
				sent := time.Now()
				rep, err := post(client, p.base+"/v1/agents/"+agent+"/tools/workbench_create", `{"id":"w"}`)
				if err == nil && rep.status == 200 {
					tally.answered(time.Since(sent))
				}
			})
		}
		time.Sleep(time.Until(kill))
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		wg.Wait()
	}
	b := fwBucket(t, url)
	for _, a := range agents {
		tally.classify(t, b, a)
	}
	// A fresh process uses every agent.
	fresh := startServeProc(t, bin, t.TempDir(), nil, "--addr", "127.0.0.1:0", "--bucket", url)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, a := range agents {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			tally.judge(a, fwUseServe(t, client, fresh.base+"/v1/agents/"+a+"/tools/", a))
		})
	}
	wg.Wait()
	t.Logf("serve: %s (%v)", tally, time.Since(start).Round(100*time.Millisecond))
	if tally.unusable != 0 || tally.noHead != 0 {
		t.Errorf("unusable agents: %v", tally.unusableAgents)
	}
}

// fwUseServe creates workbench w, puts a file and reads it back through
// a serve process; it reports whether all three succeeded.
func fwUseServe(t *testing.T, client *http.Client, base, agent string) bool {
	text := "written after the kill by " + agent + "\n"
	steps := []struct{ tool, body string }{
		{"workbench_create", `{"id":"w"}`},
		{"workbench_put_file", fmt.Sprintf(`{"id":"w","section":"outputs","path":"after.txt","text":%q}`, text)},
		{"workbench_read", `{"id":"w","section":"outputs","path":"after.txt"}`},
	}
	for _, s := range steps {
		rep, err := post(client, base+s.tool, s.body)
		if err != nil || rep.status != 200 {
			t.Errorf("agent %s: %s after the kill: %v %d %s", agent, s.tool, err, rep.status, rep.body)
			return false
		}
		if s.tool == "workbench_read" && !strings.Contains(string(rep.body), strings.TrimSuffix(text, "\n")) {
			t.Errorf("agent %s: read back %s", agent, rep.body)
			return false
		}
	}
	return true
}

// fwCLI runs, for each new agent, one `cairn workbench workbench_create`
// process killed a random 0-80 ms into its create, then creates, writes
// and reads back in the agent through the CLI's code (in this process:
// a fresh one for that agent). From outside, the create's start is known
// only approximately, so the delay is counted two ways, for fwAgents
// agents each: from the process's start (on a busy machine most kills
// then come before the first write), and from the moment its first
// write (any object under the shard's prefix: the genesis head) is seen
// in the bucket (every kill then comes during or after the writes).
func fwCLI(t *testing.T, bin string) {
	for _, fromWrite := range []bool{false, true} {
		start := time.Now()
		url := "file://" + t.TempDir()
		b := fwBucket(t, url)
		tally := &fwTally{}
		var agents []string
		for i := range fwAgents {
			agent := fmt.Sprintf("fw-cli-%03d", i)
			agents = append(agents, agent)
			fwKillCLI(t, bin, b, url, agent, fromWrite, tally)
		}
		for _, a := range agents {
			tally.classify(t, b, a)
		}
		for _, a := range agents {
			tally.judge(a, fwUseCLI(t, url, a))
		}
		from := "process start"
		if fromWrite {
			from = "its first write"
		}
		t.Logf("cli, delay from %s: %s (%v)", from, tally, time.Since(start).Round(100*time.Millisecond))
		if tally.unusable != 0 || tally.noHead != 0 {
			t.Errorf("unusable agents: %v", tally.unusableAgents)
		}
	}
}

// fwKillCLI runs agent's first workbench_create as a process and kills it
// a random 0-80 ms after it started or, with fromWrite, after its first
// write is seen in b.
func fwKillCLI(t *testing.T, bin string, b bucket.Bucket, url, agent string, fromWrite bool, tally *fwTally) {
	t.Helper()
	layout, err := workbench.Layout(agent)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Duration(rand.Int64N(int64(fwMaxDelay) + 1))
	cmd := exec.Command(bin, "workbench", "--bucket", url, "--agent", agent, "workbench_create")
	cmd.Env = processEnv()
	cmd.Stdin = strings.NewReader(`{"id":"w"}`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ended := func(err error) {
		if err == nil {
			tally.answered(time.Since(started)) // it finished before the kill
		}
	}
	if fromWrite {
		for {
			select {
			case err := <-exited:
				ended(err)
				return
			default:
			}
			if written, err := head.HasObjects(context.Background(), b, layout); err == nil && written {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	select {
	case err := <-exited:
		ended(err)
		return
	case <-time.After(d):
	}
	cmd.Process.Kill()
	ended(<-exited) // it may have finished as the kill was sent
}

// fwUseCLI creates workbench w, puts a file and reads it back through
// `cairn workbench`; it reports whether all three succeeded.
func fwUseCLI(t *testing.T, url, agent string) bool {
	text := "written after the kill by " + agent
	steps := []struct{ tool, in string }{
		{"workbench_create", `{"id":"w"}`},
		{"workbench_put_file", fmt.Sprintf(`{"id":"w","section":"outputs","path":"after.txt","text":%q}`, text)},
		{"workbench_read", `{"id":"w","section":"outputs","path":"after.txt"}`},
	}
	for _, s := range steps {
		code, out, errOut := runWith(t, s.in, "workbench", "--bucket", url, "--agent", agent, s.tool)
		if code != exitOK {
			t.Errorf("agent %s: %s after the kill: exit %d %s%s", agent, s.tool, code, out, errOut)
			return false
		}
		if s.tool == "workbench_read" && !strings.Contains(out, text) {
			t.Errorf("agent %s: read back %s", agent, out)
			return false
		}
	}
	return true
}

func fwBucket(t *testing.T, url string) bucket.Bucket {
	t.Helper()
	b, _, _, err := openBucket(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
