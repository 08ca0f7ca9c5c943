package publish

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// A publication as data (head.Command.Kind publishKind): everything the
// publication command reads of its plan, so that any replica serving the
// same deployment root can apply it from an intent. Records travel in
// their own binary codecs (exact), the rest as JSON.

// publishKind is the kind of the publication command.
const publishKind = "cairn.workbench.publish.v1"

func init() { core.RegisterCommand(publishKind, handlePublish) }

type pubPayload struct {
	Tool        string         `json:"tool"`
	Mode        pubMode        `json:"mode"`
	ID          string         `json:"id"`
	Path        []string       `json:"path"`
	NewInc      []byte         `json:"new_inc"`
	Base        []byte         `json:"base,omitempty"` // nokv.PathEntry's encoding
	ContentType string         `json:"content_type"`
	Size        uint64         `json:"size"`
	Digest      string         `json:"digest"`
	Rows        [][]byte       `json:"rows"` // nokv.ArtifactManifestEntry encodings
	Deps        [][]byte       `json:"deps,omitempty"`
	Depth       uint32         `json:"depth"`
	Op          []byte         `json:"op"`
	Rev         []byte         `json:"rev"`
	Blocks      []pubBlockWire `json:"blocks,omitempty"`
	// Staged is the oldest store time of the blocks, in Unix
	// nanoseconds (0: none known): whoever applies the command checks it
	// against its attempt's floor (head.Tx.Floor).
	Staged         int64  `json:"staged_unix_ns,omitempty"`
	ManifestDigest string `json:"manifest_digest"`
	CommandDigest  []byte `json:"command_digest"`
}

// pubBlockWire is what the command records of a staged block.
type pubBlockWire struct {
	Index  uint64 `json:"index"`
	Key    string `json:"key"`
	Offset uint64 `json:"offset"`
	Size   uint64 `json:"size"`
	Digest string `json:"digest"`
}

func encodePubPayload(p *PubPlan, manifestDigest string, cmdDigest [32]byte) ([]byte, error) {
	w := pubPayload{
		Tool: p.Tool, Mode: p.Mode, ID: p.ID, Path: p.Path, NewInc: p.NewInc[:],
		ContentType: p.ContentType, Size: p.Size, Digest: p.Digest, Depth: p.Depth,
		Op: p.St.Op[:], Rev: p.St.Rev[:], ManifestDigest: manifestDigest, CommandDigest: cmdDigest[:],
	}
	if !p.St.Stamp.IsZero() {
		w.Staged = p.St.Stamp.UnixNano()
	}
	if p.Base != nil {
		b, err := p.Base.Encode()
		if err != nil {
			return nil, err
		}
		w.Base = b
	}
	for _, r := range p.Rows {
		b, err := r.Encode()
		if err != nil {
			return nil, err
		}
		w.Rows = append(w.Rows, b)
	}
	for _, d := range p.Deps {
		w.Deps = append(w.Deps, bytes.Clone(d[:]))
	}
	for _, b := range p.St.Blocks {
		w.Blocks = append(w.Blocks, pubBlockWire{Index: b.Index, Key: b.Key, Offset: b.Offset, Size: b.Size, Digest: b.Digest.String()})
	}
	return json.Marshal(w)
}

// decodePubPayload rebuilds the plan a publication command applies, and
// its manifest and command digests.
func decodePubPayload(b []byte) (*PubPlan, string, [32]byte, error) {
	var w pubPayload
	var cmdDigest [32]byte
	bad := func(why string, err error) (*PubPlan, string, [32]byte, error) {
		return nil, "", cmdDigest, fmt.Errorf("workbench: publication payload: %s: %w: %w", why, err, bucket.ErrIntegrity)
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return bad("json", err)
	}
	if len(w.NewInc) != 16 || len(w.Op) != 16 || len(w.Rev) != 16 || len(w.CommandDigest) != 32 {
		return bad("ids", errors.New("an id of the wrong length"))
	}
	p := &PubPlan{Tool: w.Tool, Mode: w.Mode, ID: w.ID, Path: w.Path, ContentType: w.ContentType,
		Size: w.Size, Digest: w.Digest, Depth: w.Depth, St: &Staging{}}
	copy(p.NewInc[:], w.NewInc)
	copy(p.St.Op[:], w.Op)
	copy(p.St.Rev[:], w.Rev)
	copy(cmdDigest[:], w.CommandDigest)
	if w.Staged != 0 {
		p.St.Stamp = time.Unix(0, w.Staged)
	}
	if w.Base != nil {
		e, err := nokv.DecodePathEntry(w.Base)
		if err != nil {
			return bad("base", err)
		}
		p.Base = &e
	}
	for _, r := range w.Rows {
		e, err := nokv.DecodeArtifactManifestEntry(r)
		if err != nil {
			return bad("row", err)
		}
		p.Rows = append(p.Rows, e)
	}
	for _, d := range w.Deps {
		if len(d) != 16 {
			return bad("dependency", errors.New("an id of the wrong length"))
		}
		var id nokv.RevisionID
		copy(id[:], d)
		p.Deps = append(p.Deps, id)
	}
	for _, bw := range w.Blocks {
		h, err := digest.Parse(bw.Digest)
		if err != nil {
			return bad("block digest", err)
		}
		p.St.Blocks = append(p.St.Blocks, bodies.Block{Index: bw.Index, Key: bw.Key, Offset: bw.Offset, Size: bw.Size, Digest: h})
	}
	return p, w.ManifestDigest, cmdDigest, nil
}

// rejectedError is a publication's refusal as its dedupe record keeps it.
type rejectedError struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details"`
	// Stale marks the refusal of blocks older than the attempt's floor
	// (staleStaging), which the publication answers by staging again.
	Stale bool `json:"stale,omitempty"`
}

// handlePublish is the Handler of publications: it applies the plan the
// payload carries and turns a predicate failure into a head.Rejected that
// carries the error, so that every replica and retry gets the same one.
func handlePublish(s *core.Service, tx *head.Tx, payload []byte) ([]byte, error) {
	p, md, cmdDigest, err := decodePubPayload(payload)
	if err != nil {
		return nil, err
	}
	out, err := applyPublish(s, tx, p, md, cmdDigest)
	var rej *core.PubReject
	if errors.As(err, &rej) {
		b, merr := json.Marshal(rejectedError{Code: rej.E.Code, Message: rej.E.Message, Retryable: rej.E.Retryable, Details: rej.E.Details, Stale: rej.Stale})
		if merr != nil {
			return nil, merr
		}
		return nil, &head.Rejected{Value: b, Err: rej}
	}
	return out, err
}

// publicationRefusal returns the workbench error a Rejected publication
// carries: the original one when this replica refused it, else the one
// its dedupe record keeps; and whether it refused stale blocks.
func publicationRefusal(rej *head.Rejected) (*core.Error, bool) {
	var pr *core.PubReject
	if errors.As(rej.Err, &pr) {
		return pr.E, pr.Stale
	}
	var w rejectedError
	d := json.NewDecoder(bytes.NewReader(rej.Value))
	d.UseNumber()
	if err := d.Decode(&w); err != nil || w.Code == "" {
		return core.Internal(fmt.Sprintf("a recorded refusal does not decode: %v", err)), false
	}
	return &core.Error{Code: w.Code, Message: w.Message, Retryable: w.Retryable, Details: w.Details}, w.Stale
}
