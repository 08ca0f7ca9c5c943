package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
)

// TestServeMultiProcess runs three `cairn serve` processes over one
// local-file bucket, then three over one bucket of a `cairn fake-gcs`
// process, and drives them as a load balancer without affinity would:
// every call goes to a random replica. It proves, across processes:
//
//   - read-your-writes: once an append is acknowledged, a read through
//     another replica shows its line;
//   - no lost or doubled write: at the end every acknowledged line is in
//     its file exactly once, and no line is there twice, although one
//     replica is killed (SIGKILL) while appends are in flight on it;
//   - idempotency across replicas: the same Idempotency-Key and input sent
//     to another replica answers the first answer's bytes, marked
//     Idempotent-Replayed, and appends nothing.
func TestServeMultiProcess(t *testing.T) {
	bin := cairnBinary(t)
	// The two runs share the machine: in parallel they take the time of
	// the longer one.
	t.Run("file", func(t *testing.T) {
		t.Parallel()
		runReplicas(t, bin, "file://"+t.TempDir())
	})
	t.Run("fake-gcs", func(t *testing.T) {
		t.Parallel()
		runReplicas(t, bin, startFakeGCSProc(t, bin, "replicas"))
	})
}

// The workload of runReplicas.
const (
	mpReplicas = 3
	mpClients  = 6
	mpOps      = 30 // appends per client
	mpFiles    = 3
	mpVictim   = 2 // the replica killed mid-run
)

// replica is one serve process as the clients see it.
type replica struct {
	*serveProc
	alive    atomic.Bool
	inFlight atomic.Int64 // appends sent to it and not yet answered
}

// mpRun is the shared state of one run: the replicas and what the clients
// were told.
type mpRun struct {
	t        *testing.T
	client   *http.Client
	replicas []*replica

	mu        sync.Mutex
	acked     map[string]string // line -> file, for acknowledged appends
	attempted map[string]string // line -> file, for every append sent

	retriedAcks  atomic.Int64 // appends acknowledged after a failed try
	abandoned    atomic.Int64 // appends whose key the killed replica still holds
	readChecks   atomic.Int64 // reads that showed a just-acknowledged line
	replays      atomic.Int64 // idempotent retries answered by replay
	cutOff       atomic.Int64 // appends sent to the victim that got no answer
	ackCount     atomic.Int64
	killInFlight int64
}

func runReplicas(t *testing.T, bin, bucketURL string) {
	r := &mpRun{
		t:         t,
		client:    &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: mpClients}},
		acked:     map[string]string{},
		attempted: map[string]string{},
	}
	defer r.client.CloseIdleConnections()
	for range mpReplicas {
		p := startServeProc(t, bin, t.TempDir(), nil, "--addr", "127.0.0.1:0", "--bucket", bucketURL, "--request-timeout", "20s")
		rep := &replica{serveProc: p}
		rep.alive.Store(true)
		r.replicas = append(r.replicas, rep)
	}

	killed := make(chan struct{})
	go r.killMidRun(killed)
	var wg sync.WaitGroup
	for c := range mpClients {
		wg.Go(func() { r.runClient(c) })
	}
	wg.Wait()
	<-killed
	if t.Failed() {
		return
	}
	r.verify()
}

// killMidRun kills the victim replica once 40% of the appends are
// acknowledged, at a moment when appends are in flight on it: two if that
// comes within a second, else one.
func (r *mpRun) killMidRun(done chan<- struct{}) {
	defer close(done)
	v := r.replicas[mpVictim]
	for r.ackCount.Load() < mpClients*mpOps*4/10 {
		if r.t.Failed() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	atLeast := int64(2)
	relax := time.Now().Add(time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for v.inFlight.Load() < atLeast {
		if time.Now().After(relax) {
			atLeast = 1
		}
		if time.Now().After(deadline) {
			r.t.Errorf("never saw an append in flight on replica %d after %d acknowledgements", mpVictim, r.ackCount.Load())
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
	v.alive.Store(false) // no new calls go there; the ones in flight stay
	r.killInFlight = v.inFlight.Load()
	if err := v.cmd.Process.Kill(); err != nil {
		r.t.Errorf("kill replica %d: %v", mpVictim, err)
		return
	}
	<-v.exited
}

// pick returns a random live replica other than not (-1 for any).
func (r *mpRun) pick(not int) int {
	for {
		i := rand.IntN(len(r.replicas))
		if i != not && r.replicas[i].alive.Load() {
			return i
		}
	}
}

func (r *mpRun) tool(i int, name string) string {
	return r.replicas[i].base + "/v1/agents/mp/tools/" + name
}

// call posts to random live replicas until one answers with something
// other than 503 (a failure worth another try), and returns the answer
// and the replica that gave it. A replica that cannot be reached (it was
// killed) is tried no more by this call.
func (r *mpRun) call(not int, name, body string, headers ...string) (reply, int) {
	for range 20 {
		i := r.pick(not)
		rep, err := post(r.client, r.tool(i, name), body, headers...)
		if err == nil && rep.status != http.StatusServiceUnavailable {
			return rep, i
		}
		not = i
		time.Sleep(10 * time.Millisecond)
	}
	r.t.Errorf("%s: no replica answered 20 tries", name)
	return reply{}, -1
}

func (r *mpRun) runClient(c int) {
	t := r.t
	// Every client creates the workbench: the creates race across
	// replicas and each must succeed.
	if rep, _ := r.call(-1, "workbench_create", `{"id":"mp"}`); rep.status != 200 {
		t.Errorf("client %d: create: %d %s", c, rep.status, rep.body)
		return
	}
	for op := range mpOps {
		if t.Failed() {
			return
		}
		line := fmt.Sprintf("c%d-op%02d", c, op)
		file := fmt.Sprintf("f%d.log", (c+op)%mpFiles)
		body := fmt.Sprintf(`{"id":"mp","section":"logs","path":%q,"text":%q}`, file, line+"\n")
		r.mu.Lock()
		r.attempted[line] = file
		r.mu.Unlock()

		first, via, ok := r.appendOnce(line, body)
		if !ok {
			continue
		}
		r.mu.Lock()
		r.acked[line] = file
		r.mu.Unlock()
		r.ackCount.Add(1)

		// Read your write through another replica.
		lines := r.read(r.pick(via), file)
		if !slices.Contains(lines, line) {
			t.Errorf("client %d: %s acknowledged by replica %d, not seen by a read through another replica: %q", c, line, via, lines)
			return
		}
		r.readChecks.Add(1)

		// Every fifth append is sent again, with its key, elsewhere.
		if op%5 == 0 {
			again, _ := r.call(via, "workbench_append", body, "Idempotency-Key", "mp-"+line)
			if again.status != 200 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("client %d: retry of %s through another replica: %d replayed=%q\n got %s\nwant %s", c, line, again.status, again.header.Get("Idempotent-Replayed"), again.body, first.body)
				return
			}
			r.replays.Add(1)
		}
	}
}

// appendOnce sends one append with its Idempotency-Key until a replica
// acknowledges it, trying again with the same key after a failure that
// may be retried. ok is false when the append is abandoned: the key is
// held by a call that was running on the killed replica, whose lease
// outlasts the test; such an append may have landed or not, once at most.
func (r *mpRun) appendOnce(line, body string) (first reply, via int, ok bool) {
	key := "mp-" + line
	not := -1
	for try := range 30 {
		i := r.pick(not)
		rep := r.replicas[i]
		rep.inFlight.Add(1)
		ans, err := post(r.client, r.tool(i, "workbench_append"), body, "Idempotency-Key", key)
		rep.inFlight.Add(-1)
		switch {
		case err != nil: // the replica died under the call, or before it
			if i == mpVictim {
				r.cutOff.Add(1)
			}
			not = i
		case ans.status == 200:
			if try > 0 {
				r.retriedAcks.Add(1)
			}
			return ans, i, true
		case ans.code() == serve.CodeIdempotencyKeyInUse:
			r.abandoned.Add(1)
			return reply{}, -1, false
		case ans.status == http.StatusServiceUnavailable || ans.status == http.StatusConflict && ans.code() == "Conflict":
			not = i // retryable: the key was released, try again
		default:
			r.t.Errorf("append %s through replica %d: %d %s", line, i, ans.status, ans.body)
			return reply{}, -1, false
		}
		time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
	}
	r.t.Errorf("append %s: not acknowledged in 30 tries", line)
	return reply{}, -1, false
}

// read returns the lines of a file through replica i, or through another
// live one if i cannot be reached. One page of text lines holds them all:
// a file gets at most mpClients*mpOps lines, under the page limit of 300.
func (r *mpRun) read(i int, file string) []string {
	body := fmt.Sprintf(`{"id":"mp","section":"logs","path":%q,"limit":300}`, file)
	for range 20 {
		ans, err := post(r.client, r.tool(i, "workbench_read"), body)
		if err != nil {
			i = r.pick(i) // it was killed
			continue
		}
		if ans.status == http.StatusServiceUnavailable {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		var res struct {
			RecordType string  `json:"record_type"`
			NextCursor *string `json:"next_cursor"`
			Items      []struct{ Value string }
		}
		if ans.status != 200 || json.Unmarshal(ans.body, &res) != nil || res.RecordType != "text_lines" || res.NextCursor != nil {
			r.t.Errorf("read %s through replica %d: %d %s", file, i, ans.status, ans.body)
			return nil
		}
		lines := make([]string, len(res.Items))
		for j, it := range res.Items {
			lines[j] = it.Value
		}
		return lines
	}
	r.t.Errorf("read %s: no replica answered", file)
	return nil
}

// verify reads every file through every surviving replica and checks it
// against what the clients were told.
func (r *mpRun) verify() {
	t := r.t
	if r.replicas[mpVictim].alive.Load() {
		t.Fatal("the victim replica was never killed")
	}
	verified, extra := 0, 0
	for i, rep := range r.replicas {
		if !rep.alive.Load() {
			continue
		}
		seen := map[string]int{}
		for f := range mpFiles {
			file := fmt.Sprintf("f%d.log", f)
			for _, line := range r.read(i, file) {
				seen[line]++
				if want, ok := r.attempted[line]; !ok || want != file {
					t.Errorf("replica %d: %s holds %q, which no client sent to it", i, file, line)
				}
			}
		}
		for line, n := range seen {
			if n > 1 {
				t.Errorf("replica %d: %q is present %d times", i, line, n)
			}
			if _, ok := r.acked[line]; !ok && i == r.firstLive() {
				extra++
			}
		}
		for line := range r.acked {
			if seen[line] != 1 {
				t.Errorf("replica %d: acknowledged %q present %d times", i, line, seen[line])
			}
			verified++
		}
	}
	if len(r.acked) == 0 {
		t.Fatal("no append was acknowledged")
	}
	t.Logf("%d appends sent by %d clients through %d replicas: %d acknowledged (%d after a failed try), %d abandoned with their key held by the killed replica, %d present though unacknowledged; "+
		"%d read-your-writes checks through another replica; %d retries with the same Idempotency-Key replayed by another replica; "+
		"replica %d killed (SIGKILL) with %d appends in flight on it, %d sent to it unanswered; %d acknowledged lines verified exactly once through the %d survivors",
		len(r.attempted), mpClients, mpReplicas, len(r.acked), r.retriedAcks.Load(), r.abandoned.Load(), extra,
		r.readChecks.Load(), r.replays.Load(), mpVictim, r.killInFlight, r.cutOff.Load(), verified, mpReplicas-1)
}

// firstLive is the lowest index of a live replica.
func (r *mpRun) firstLive() int {
	for i, rep := range r.replicas {
		if rep.alive.Load() {
			return i
		}
	}
	return -1
}
