package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/workbench"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted, in bytes.
const MaxIdempotencyKey = 255

// checkIdempotencyKey refuses a key that is empty, longer than
// MaxIdempotencyKey or holds anything but printable ASCII.
func checkIdempotencyKey(k string) *workbench.Error {
	if k == "" || len(k) > MaxIdempotencyKey {
		return workbench.InvalidArgumentsf("Idempotency-Key must be 1 to %d bytes, got %d", MaxIdempotencyKey, len(k))
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return workbench.InvalidArgumentsf("Idempotency-Key has the byte 0x%02x at %d; only printable ASCII is allowed", k[i], i)
		}
	}
	return nil
}

// Record states.
const (
	statePending  = "pending"  // a request holds the key and is running
	stateDone     = "done"     // the result is stored for replay
	stateReleased = "released" // the last try failed retryably: the next one runs
)

// record is the stored object of one (agent, key): the claim of the
// request that runs, then its result. The object is the record's members
// as one line of JSON, a newline, and the result's bytes as the tool
// returned them (no re-encoding: a 16 MiB read stays 16 MiB). It is
// written create-only when the key is first used and replaced only
// conditionally on the version read, so two replicas never both own a
// key.
type record struct {
	V int `json:"v"`
	// Input is the SHA-256 of the tool name and its input: a reuse of the
	// key with another tool or another input is refused.
	Input string `json:"input"`
	State string `json:"state"`
	// Epoch counts the tries that ended with a retryable failure that
	// applied nothing; the engine request ids the tool runs under are
	// bound to (agent, key, epoch), so a try after such a failure runs
	// afresh while a try after a crash replays what the crashed one
	// committed.
	Epoch int `json:"epoch"`
	// Started is when the owner of a pending record began; after the
	// lease another request may take the key over.
	Started time.Time `json:"started"`
	// OK says the result is a success.
	OK bool `json:"ok,omitempty"`
	// Result is the tool's result, byte for byte, once State is done. It
	// follows the JSON line in the object.
	Result []byte `json:"-"`
}

// idem is one keyed request: where its record lives and what it holds.
type idem struct {
	b       bucket.Bucket
	key     string // the bucket key of the record
	bind    string // the request id prefix the tool's commands are bound to
	input   string
	version bucket.Version // of the record this request owns
	rec     record
}

// keyHash hashes an idempotency key with its agent: records of two agents
// never collide, and the client's key never appears in a bucket key.
func keyHash(agentID, key string) digest.Hash {
	return digest.Sum([]byte("cairn.serve.idempotency.v1\x00" + agentID + "\x00" + key))
}

// inputHash is the Input of a record: the tool and its exact input.
func inputHash(tool string, input []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s:", len(tool), tool)
	h.Write(input)
	return hex.EncodeToString(h.Sum(nil))
}

// claimOutcome is what claiming a key decided.
type claimOutcome int

const (
	claimRun    claimOutcome = iota // this request owns the key: run the tool
	claimReplay                     // the result is stored: answer it
	claimReused                     // the key was used with another input
	claimBusy                       // another request holds the key
)

// claim takes the key for this request, or finds why it cannot. A new key
// is created pending; a released key, or a pending one whose lease ran
// out (its owner crashed or gave up), is taken over by a conditional
// replace. Only one request wins a create or a replace, so only one runs
// the tool at a time.
func (d *idem) claim(ctx context.Context, now time.Time, lease time.Duration) (claimOutcome, error) {
	for try := 0; ; try++ {
		body, err := d.encode(record{V: 1, Input: d.input, State: statePending, Started: now})
		if err != nil {
			return 0, err
		}
		attrs, err := d.b.Put(ctx, d.key, body, bucket.IfAbsent())
		if err == nil {
			d.version = attrs.Version
			d.rec = record{V: 1, Input: d.input, State: statePending, Started: now}
			return claimRun, nil
		}
		if !errors.Is(err, bucket.ErrPrecondition) {
			return 0, err
		}
		cur, attrs, err := d.read(ctx)
		if errors.Is(err, bucket.ErrNotExist) && try < 3 {
			continue // removed meanwhile: create it again
		}
		if err != nil {
			return 0, err
		}
		if cur.Input != d.input {
			return claimReused, nil
		}
		switch {
		case cur.State == stateDone:
			d.rec = cur
			return claimReplay, nil
		case cur.State == statePending && now.Sub(cur.Started) < lease:
			return claimBusy, nil
		}
		// Released, or pending past its lease: take it over, in the same
		// epoch (its commands replay, see record.Epoch).
		next := record{V: 1, Input: d.input, State: statePending, Epoch: cur.Epoch, Started: now}
		body, err = d.encode(next)
		if err != nil {
			return 0, err
		}
		attrs, err = d.b.Put(ctx, d.key, body, bucket.IfVersion(attrs.Version))
		if errors.Is(err, bucket.ErrPrecondition) {
			if try < 3 {
				continue // another request moved it first: look again
			}
			return claimBusy, nil
		}
		if err != nil {
			return 0, err
		}
		d.version = attrs.Version
		d.rec = next
		return claimRun, nil
	}
}

// boundID is the request id the tool's engine commands run under.
func (d *idem) boundID() string {
	return fmt.Sprintf("%s.%d", d.bind, d.rec.Epoch)
}

// finish stores the result of the request that owns the key. A result
// that is an error a retry may cure is not kept: the record is released
// so that the next request with the key runs again, in a new epoch when
// the failure applied nothing, in the same epoch when its outcome is
// unknown (the engine then replays what landed).
func (d *idem) finish(ctx context.Context, result []byte, ok bool, code string, retryable bool) error {
	next := d.rec
	if ok || !retryable {
		next.State, next.Result, next.OK = stateDone, result, ok
	} else {
		next.State = stateReleased
		if code != workbench.CodeUnknownOutcome {
			next.Epoch++
		}
	}
	body, err := d.encode(next)
	if err != nil {
		return err
	}
	_, err = d.b.Put(ctx, d.key, body, bucket.IfVersion(d.version))
	return err
}

func (d *idem) read(ctx context.Context) (record, bucket.Attrs, error) {
	body, attrs, err := d.b.Get(ctx, d.key)
	if err != nil {
		return record{}, attrs, err
	}
	meta, result, _ := bytes.Cut(body, []byte("\n"))
	var r record
	if err := json.Unmarshal(meta, &r); err != nil || r.V != 1 {
		return record{}, attrs, fmt.Errorf("serve: idempotency record %s: %w", d.key, bucket.ErrIntegrity)
	}
	r.Result = result
	return r, attrs, nil
}

// encode lays r out as the object holds it. encoding/json writes no raw
// newline, so the first newline ends the JSON line.
func (d *idem) encode(r record) ([]byte, error) {
	meta, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(append(meta, '\n'), r.Result...), nil
}
