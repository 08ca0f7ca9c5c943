package storesuite

// The store suite's clients: the appends and reads they run, how they
// retry and classify errors, and the history they record.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
)

// errStoreCrash is what a crash fault answers the dying replica's write.
var errStoreCrash = errors.New("conformance: injected crash")

// errStoreReopen marks an error of opening a replica's store again after
// it crashed.
var errStoreReopen = errors.New("conformance: reopen after a crash")

// errStoreApplyRead marks an error of the append command's own read, so
// that it is told apart from errors the engine returns by itself.
var errStoreApplyRead = errors.New("conformance: append read")

// runClients runs every client to completion.
func (r *storeRun) runClients(seed uint64) {
	var wg sync.WaitGroup
	for _, rep := range r.replicas {
		for c := range r.opts.Clients {
			client := rep.idx*r.opts.Clients + c
			rng := rand.New(rand.NewPCG(seed, uint64(client)+1))
			wg.Go(func() { r.client(client, rep, rng) })
		}
	}
	wg.Wait()
	// A dead replica's commit may still be winding down and fire a fault:
	// disarm them all before counting.
	for _, rep := range r.replicas {
		rep.mu.Lock()
		for _, fb := range rep.fbs {
			fb.Clear()
		}
		for _, lw := range rep.lates {
			lw.enable(false)
		}
		rep.mu.Unlock()
	}
	for _, rep := range r.replicas {
		rep.mu.Lock()
		r.rep.Crashes += rep.crashes
		handles := rep.handles
		for _, lw := range rep.lates {
			if n := lw.fired.Load(); n > 0 {
				r.rep.Faults["late-landing"] += n
			}
		}
		rep.mu.Unlock()
		for _, h := range handles {
			if n := h.h.Fired(); n > 0 {
				r.rep.Faults[h.kind] += n
			}
		}
	}
}

func (r *storeRun) client(id int, home *storeReplica, rng *rand.Rand) {
	for range r.opts.Ops {
		if r.ctx.Err() != nil {
			return
		}
		k := rng.IntN(len(r.keys))
		if rng.IntN(2) == 0 {
			r.appendOp(id, home, rng, k)
		} else {
			r.readOp(id, home, k, rng.IntN(2) == 0)
		}
	}
}

// storeErrClass classifies an error a client saw, and says whether it is
// one the suite expects under faults. A bucket error that the append
// command's own read did not return is marked "raw-": the engine returned
// it as it was.
func storeErrClass(err error) (string, bool) {
	engine := ""
	switch {
	case errors.Is(err, errStoreReopen):
		engine = "reopen-"
	case !errors.Is(err, errStoreApplyRead):
		engine = "raw-"
	}
	switch {
	case errors.Is(err, head.ErrRetryable):
		return "retryable", true
	case errors.Is(err, head.ErrUnknownOutcome):
		return "unknown-outcome", true
	case errors.Is(err, head.ErrClosed):
		return "closed", true
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", true
	case errors.Is(err, context.Canceled):
		return "canceled", true
	case errors.Is(err, errStoreCrash):
		return "crash", true
	case errors.Is(err, head.ErrHeadRolledBack):
		// A head older than one the replica saw: the engine refused to
		// serve it. Expected only of a store that serves stale reads.
		return "head-rolled-back", true
	case errors.Is(err, bucket.ErrThrottled):
		return engine + "throttled", true
	case errors.Is(err, bucket.ErrUnavailable):
		return engine + "unavailable", true
	case errors.Is(err, bucket.ErrAmbiguous):
		return engine + "ambiguous", true
	case errors.Is(err, bucket.ErrIntegrity):
		return engine + "integrity", true
	}
	return "other", false
}

func (r *storeRun) noteErr(op string, err error) {
	class, ok := storeErrClass(err)
	class = op + ":" + class
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[class]++
	if _, ok := r.rep.ErrorSamples[class]; !ok {
		r.rep.ErrorSamples[class] = err.Error()
	}
	if !ok && len(r.rep.Unexpected) < 10 {
		r.rep.Unexpected = append(r.rep.Unexpected, err.Error())
	}
}

func (r *storeRun) record(op porcupine.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, op)
}

// appendCommand is append(key k, id) with its own request id. With
// head.Options.Intents it is a data command (storeAppendKind), so that
// replicas carry each other's appends through intents.
func (r *storeRun) appendCommand(k int, id string) head.Command {
	key := r.keys[k]
	cmd := head.Command{
		Namespace: r.keyRoot,
		RequestID: "append/" + id,
		Digest:    head.Digest([]byte("append"), key, []byte(id)),
	}
	if r.opts.Head.Intents {
		cmd.Kind, cmd.Payload = storeAppendKind, append([]byte{byte(k)}, id...)
		return cmd
	}
	cmd.Apply = func(tx *head.Tx) ([]byte, error) { return r.applyAppend(tx, k, id) }
	return cmd
}

// storeAppendKind is the kind of the append as a data command: its payload
// is the key's index and the id.
const storeAppendKind = "storesuite.append"

// handleAppend registers the append's handler on a replica's Store.
func (r *storeRun) handleAppend(st *head.Store) {
	st.Handle(storeAppendKind, func(tx *head.Tx, payload []byte) ([]byte, error) {
		if len(payload) < 2 || int(payload[0]) >= len(r.keys) {
			return nil, fmt.Errorf("conformance: append payload %x", payload)
		}
		return r.applyAppend(tx, int(payload[0]), string(payload[1:]))
	})
}

// applyAppend appends id to the list of key k.
func (r *storeRun) applyAppend(tx *head.Tx, k int, id string) ([]byte, error) {
	key := r.keys[k]
	v, _, err := tx.Get(storeFamily, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errStoreApplyRead, err)
	}
	list := []byte(storeAppendID(string(v), id))
	if err := tx.Put(storeFamily, key, list); err != nil {
		return nil, err
	}
	return list, nil
}

func (r *storeRun) appendOp(client int, home *storeReplica, rng *rand.Rand, k int) {
	id := strconv.FormatUint(r.nextID.Add(1), 10)
	cmd := r.appendCommand(k, id)
	// A quarter of the appends carry no request id: the client cannot
	// retry them, and one Do must apply them at most once by the commit
	// protocol alone, dedupe aside.
	bare := rng.IntN(4) == 0
	if bare {
		cmd.RequestID, cmd.Digest = "", [32]byte{}
	}
	r.mu.Lock()
	r.issued[id] = k
	if bare {
		r.rep.Bare++
	}
	r.mu.Unlock()
	in := storeInput{Key: k, Append: true, ID: id}
	call := r.now()
	for attempt := 1; ; attempt++ {
		rep := home
		if attempt > 1 && rng.IntN(2) == 0 {
			rep = r.replicas[rng.IntN(len(r.replicas))]
		}
		res, err := r.do(rep, cmd, rng.IntN(2) == 0)
		if err == nil {
			ret := r.now()
			r.record(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: storeOutput{List: string(res.Value)}, Return: ret})
			r.mu.Lock()
			r.acked[id] = k
			r.rep.Appends++
			if res.Replayed {
				r.rep.Replays++
			}
			r.mu.Unlock()
			return
		}
		r.noteErr("append", err)
		// A first attempt refused outright (the engine's attempt budget ran
		// out, or the command's own read failed) applied nothing: a client
		// that gives up on it knows the append failed, and the id must
		// never appear.
		if attempt == 1 && (errors.Is(err, head.ErrRetryable) || errors.Is(err, errStoreApplyRead)) && (bare || rng.IntN(2) == 0) {
			r.mu.Lock()
			delete(r.issued, id)
			r.failed[id] = k
			r.rep.Failed++
			r.mu.Unlock()
			return
		}
		if bare || attempt >= r.opts.ClientAttempts || rng.Float64() < r.sc.abandon || r.ctx.Err() != nil {
			r.record(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: storeOutput{Unknown: true}, Return: storeUnknownReturn})
			r.mu.Lock()
			r.rep.Unknown++
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		r.rep.Retries++
		r.mu.Unlock()
		time.Sleep(time.Millisecond + time.Duration(rng.IntN(3000))*time.Microsecond)
	}
}

// do runs cmd once on rep. With observe, it first pins a snapshot, as a
// tool that checks its predicates does, and the command brings it
// (Command.At): the first attempt builds on it without reading the head.
func (r *storeRun) do(rep *storeReplica, cmd head.Command, observe bool) (head.Result, error) {
	st, gen, err := rep.current()
	if err != nil {
		return head.Result{}, err
	}
	ctx, cancel := context.WithTimeout(gen, r.opts.OpTimeout)
	defer cancel()
	if observe {
		sn, err := st.Pin(ctx)
		if err != nil {
			return head.Result{}, err
		}
		cmd.At = sn
	}
	return st.Do(ctx, cmd)
}

// readOp reads key k through a pinned snapshot or, with viaDo, through a
// read-only command, which shares group commits with appends.
func (r *storeRun) readOp(client int, rep *storeReplica, k int, viaDo bool) {
	call := r.now()
	read := r.read
	if viaDo {
		read = r.readCommand
	}
	v, err := read(rep, k)
	if err != nil {
		r.noteErr("read", err)
		r.mu.Lock()
		r.rep.FailedRead++
		r.mu.Unlock()
		return
	}
	r.record(porcupine.Operation{ClientId: client, Input: storeInput{Key: k}, Call: call, Output: storeOutput{List: v}, Return: r.now()})
	r.mu.Lock()
	r.rep.Reads++
	r.mu.Unlock()
}

func (r *storeRun) read(rep *storeReplica, k int) (string, error) {
	st, gen, err := rep.current()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(gen, r.opts.OpTimeout)
	defer cancel()
	sn, err := st.Pin(ctx)
	if err != nil {
		return "", err
	}
	v, _, err := sn.Get(ctx, storeFamily, r.keys[k])
	return string(v), err
}

func (r *storeRun) readCommand(rep *storeReplica, k int) (string, error) {
	res, err := r.do(rep, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		v, _, err := tx.Get(storeFamily, r.keys[k])
		return v, err
	}}, k%2 == 0)
	return string(res.Value), err
}
