package maintenance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Fsck checks one deployment root from the bucket up, as the seed's
// qualification requirement asks: it recomputes what the records claim
// about each other (strong reference counts, seals, holds) from the
// records themselves and never trusts a listing of the bucket.
//
// # Layers
//
// Fsck checks the head's root and the root of every pin of the shard, and
// the roots their holds name: one level, as the sweep keeps them
// (roots.Root.KeptHolds); the holds of a held root are not followed.
//
// The engine layer is one verifying walk of each of those roots
// (walk.Walk with Verify: the checks of head.Check in strict mode, pin
// verify and the sweep's mark, made by the same walker): every object
// those roots reach exists, hashes to its name, decodes canonically, and
// agrees with the table, index or root that names it; every block a
// manifest row names is fetched and the row's slice of it checked
// against the row's digest.
//
// The Workbench layer reads the records of each root, and checks the
// invariants docs/operations.md lists ("What fsck checks"): reference
// counts against RevisionRef rows, GC candidates, manifests (and, with
// FsckOptions.Bodies, each body read whole against its digest), paths,
// directories and index rows, commit seals and consumers, snapshot holds.
// A revision's body is checked once, at the first root that names it:
// revisions are immutable.
//
// Fsck writes nothing. Its memory grows with the number of records of
// the root: it holds one root's records at a time.

// FsckOptions tune Fsck.
type FsckOptions struct {
	// AgentID picks the deployment root. Default DefaultAgentID.
	AgentID string
	// Bodies also reads every revision's body whole, block after block,
	// and checks it against the revision's body digest. Without it every
	// block is still fetched once and checked against the digest its
	// manifest row gives, but a block two revisions share is read once,
	// and the whole-body digest is not recomputed.
	Bodies bool
	// MaxFindings stops collecting findings after this many. Default 1000.
	MaxFindings int
	// Progress, if set, is called after each revision's body is read
	// (Bodies) with the number read so far and the total at this root.
	Progress func(done, total int)
}

// FsckFinding is one inconsistency: where it was seen, the record (or
// engine object) concerned, what the other records say it should be and
// what was found.
type FsckFinding struct {
	// Layer is "engine" (an engine object), "block" (a block a manifest
	// row names), "pin" (a pin object) or "workbench" (records that
	// disagree).
	Layer string `json:"layer"`
	// Root is the hash of the root the finding was seen at (the head's,
	// a pinned or a held root's).
	Root string `json:"root"`
	// Family is the record family concerned ("" for an engine object).
	Family string `json:"family,omitempty"`
	// Record names the record in words: "revision 3f…", "path wb1:outputs/a.txt".
	Record string `json:"record,omitempty"`
	// Key is the record's key in hex ("" for an engine object).
	Key      string `json:"key,omitempty"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
}

func (f FsckFinding) String() string {
	s := f.Layer
	if f.Family != "" {
		s += " " + f.Family
	}
	if f.Record != "" {
		s += " " + f.Record
	}
	return fmt.Sprintf("%s: expected %s, found %s (root %s)", s, f.Expected, f.Found, shortHash(f.Root))
}

// FsckReport is what Fsck found, and what it covered.
type FsckReport struct {
	AgentID string `json:"agent_id"`
	// Shard is the logical shard id of the deployment.
	Shard string `json:"shard"`
	// Empty: the shard has no head yet, or a genesis head (sequence 0,
	// no root), so there was nothing to check.
	Empty bool `json:"empty"`
	// Head is the hash of the root the head named, Sequence its commit
	// sequence.
	Head     string `json:"head"`
	Sequence uint64 `json:"sequence"`
	// Pins counts the shard's pins; their roots are checked too.
	Pins int `json:"pins"`
	// Roots counts the distinct roots checked: the head's, every pinned
	// one, and every root a hold of those names.
	Roots int `json:"roots"`
	// Records counts the records checked per family, summed over roots.
	Records map[string]int `json:"records"`
	// Objects and Bytes count the distinct objects the roots reach, each
	// fetched and verified (engine objects and blocks); Blocks and
	// BlockBytes the blocks among them.
	Objects    int   `json:"objects"`
	Bytes      int64 `json:"bytes"`
	Blocks     int   `json:"blocks"`
	BlockBytes int64 `json:"block_bytes"`
	// Bodies counts the revisions whose whole body was read and checked
	// against its digest (FsckOptions.Bodies), BodyBytes their bytes.
	Bodies    int           `json:"bodies"`
	BodyBytes int64         `json:"body_bytes"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Findings  []FsckFinding `json:"findings"`
	// Truncated: MaxFindings was reached; more may exist.
	Truncated bool `json:"truncated"`
}

// Clean reports whether Fsck found nothing.
func (r *FsckReport) Clean() bool { return len(r.Findings) == 0 }

// Fsck opens the deployment root of opts.AgentID in b and checks it (see
// Service.Fsck). The error is for a check that could not run (the bucket
// failed); inconsistencies are the report's findings.
func Fsck(ctx context.Context, b bucket.Bucket, opts FsckOptions) (*FsckReport, error) {
	s, err := core.Open(ctx, b, core.Options{AgentID: opts.AgentID})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return FsckService(ctx, s, opts)
}

// Fsck checks the Service's deployment root at the current head, at every
// pinned root and at every root a hold of those names. opts.AgentID is
// ignored: the Service's root is checked. It reads straight from the
// bucket through a Store and a block reader of its own, so nothing the
// Service cached is trusted.
func FsckService(ctx context.Context, s *core.Service, opts FsckOptions) (*FsckReport, error) {
	start := time.Now()
	if opts.MaxFindings <= 0 {
		opts.MaxFindings = 1000
	}
	b := s.Store().Bucket()
	store, err := head.Open(ctx, b, s.Store().ID(), s.Store().Schema(), head.Options{})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	rep := &FsckReport{AgentID: s.Opts.AgentID, Shard: store.ID().String(), Records: map[string]int{}}
	fk := &fsck{
		s: s, store: store, opts: opts, rep: rep,
		bodies:  bodies.New(b, store.Layout(), bodies.Options{CacheBytes: -1}),
		checked: map[nokv.RevisionID]bool{},
		seen:    map[string]bool{},
		objects: map[string]bool{},

		badBlocks:  map[string]FsckFinding{},
		liveBlocks: map[string]bool{},
	}
	sn, err := store.PinOrEmpty(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fk.unopened(ctx, start, err)
	}
	if sn.Empty() {
		// Never written, or a genesis head (a first write that stopped
		// before its first commit): no root, no record to check.
		rep.Empty = true
		rep.Elapsed = time.Since(start)
		return rep, nil
	}
	rep.Head, rep.Sequence = sn.RootHash().String(), sn.Sequence()

	// The roots to check: the head's and every pinned one (a backup's
	// promise). Holds are followed from each.
	tops := []digest.Hash{sn.RootHash()}
	pins, err := gcsweep.ListPins(ctx, b, store.Layout())
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		fk.add(FsckFinding{Layer: "pin", Root: sn.RootHash().String(), Record: "pins " + store.Layout().PinsPrefix(),
			Expected: "pins that read and decode", Found: err.Error()})
	}
	for _, p := range pins {
		rep.Pins++
		if !slices.Contains(tops, p.RootHash) {
			tops = append(tops, p.RootHash)
		}
	}
	// A head older than a root or pin of the bucket: an older head object
	// put back. Every later commit is unreachable from it.
	rb, err := gcsweep.FindRollback(ctx, b, store.Layout())
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		fk.add(FsckFinding{Layer: "engine", Root: sn.RootHash().String(), Record: "head " + store.Layout().Head(),
			Expected: "every root of the shard readable, none newer than the head", Found: err.Error()})
	case rb != nil:
		fk.add(FsckFinding{Layer: "engine", Root: sn.RootHash().String(), Record: "head " + store.Layout().Head(),
			Expected: fmt.Sprintf("the newest head (sequence %d or later)", rb.Sequence), Found: rb.Error()})
	}
	for _, h := range tops {
		if err := fk.checkObjects(ctx, h); err != nil {
			return nil, err
		}
	}

	// The Workbench layer, root by root: the head's first, then the
	// pinned ones, and each root their holds name once (one level).
	type visit struct {
		h     digest.Hash
		reach roots.Reach
	}
	var todo []visit
	for _, h := range tops {
		todo = append(todo, visit{h, roots.ReachKept})
	}
	done := map[digest.Hash]bool{}
	for len(todo) > 0 {
		h, reach := todo[0].h, todo[0].reach
		todo = todo[1:]
		if done[h] {
			continue
		}
		done[h] = true
		at := sn
		if h != sn.RootHash() {
			if at, err = store.At(ctx, h); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				// The engine layer reported why the root cannot be read.
				continue
			}
		}
		rep.Roots++
		if err := fk.checkRoot(ctx, at); err != nil {
			return nil, err
		}
		for _, hold := range at.Root().KeptHolds(reach) {
			todo = append(todo, visit{hold.Root, roots.ReachHeld})
		}
	}
	fk.reportBlocks()
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// unopened checks what it can of a store whose head's root does not open
// (a missing or damaged root, or a record the schema gate reads): the
// head's root is read from the head object itself and the engine layer
// checks it, so the findings say what is damaged. The Workbench layer
// cannot run.
func (fk *fsck) unopened(ctx context.Context, start time.Time, pinErr error) (*FsckReport, error) {
	b, layout := fk.store.Bucket(), fk.store.Layout()
	hd, _, err := head.ReadHead(ctx, b, layout, fk.store.Schema().Marker)
	if err != nil {
		return nil, fmt.Errorf("workbench: fsck: %w (read the head: %w)", pinErr, err)
	}
	if hd.Genesis() {
		return nil, fmt.Errorf("workbench: fsck: %w (the head is a genesis head)", pinErr)
	}
	h := hd.RootHash()
	fk.rep.Head, fk.rep.Sequence = hd.Root, hd.Sequence
	fk.add(FsckFinding{Layer: "engine", Root: hd.Root, Record: "head " + layout.Head(),
		Expected: "a root that opens", Found: pinErr.Error()})
	if err := fk.checkObjects(ctx, h); err != nil {
		return nil, err
	}
	fk.incomplete = true // no records were read
	fk.reportBlocks()
	fk.rep.Elapsed = time.Since(start)
	return fk.rep, nil
}

// checkObjects is the engine layer at root h: one verifying walk
// (walk.Walk with Verify, the walk head.Check, pin verify and the
// sweep's mark make) of every object h and the roots its holds name
// reach, blocks included. Each engine object is checked against its
// hash, decoded and checked against the reference that named it; each
// block's slice against the digest its manifest row gives. An engine
// object that fails is a finding. A block that fails is kept in
// badBlocks for reportBlocks to judge: the walk reads records as stored,
// so it also meets the rows of a collected revision that a newer delta
// of the same root deletes. Objects are counted once across roots.
func (fk *fsck) checkObjects(ctx context.Context, h digest.Hash) error {
	b, layout, rep := fk.store.Bucket(), fk.store.Layout(), fk.rep
	walkOpts := walk.Options{
		Verify: true, RefFamilies: BlockRefFamilies,
		OnError: func(o walk.Object, err error) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if o.Kind != walk.KindBlock {
				fk.add(FsckFinding{Layer: "engine", Root: h.String(), Expected: "a sound object", Found: err.Error()})
				return nil
			}
			if _, seen := fk.badBlocks[o.Key]; !seen {
				fk.badBlocks[o.Key] = FsckFinding{Layer: "block", Root: h.String(),
					Family: layout.Schema().Name(nokv.FamilyArtifactManifest), Record: "block " + o.Key,
					Expected: "the block, its bytes matching " + o.Digest, Found: err.Error()}
			}
			return nil
		},
	}
	return walk.Walk(ctx, b, layout, h, BlockRefs, walkOpts, func(o walk.Object) error {
		if fk.objects[o.Key] {
			return nil
		}
		fk.objects[o.Key] = true
		rep.Objects++
		rep.Bytes += o.Size
		if o.Kind == walk.KindBlock {
			rep.Blocks++
			rep.BlockBytes += o.Size
		}
		return nil
	})
}

// reportBlocks reports the blocks that failed the walk and that a row of
// a live revision names, at a root the Workbench layer read: one that is
// Available and referenced there. The rows of a revision no reference
// reaches (a replaced one, which may be collected: docs/operations.md,
// section 5), or one being collected (Deleting, Quarantined), name
// blocks that may be gone, and rows the walk met in a delta that a
// newer one deletes are no rows at all. When a root's records could not all be read, every
// failed block is reported: what names it is unknown.
func (fk *fsck) reportBlocks() {
	keys := slices.Sorted(maps.Keys(fk.badBlocks))
	for _, k := range keys {
		if fk.liveBlocks[k] || fk.incomplete {
			fk.add(fk.badBlocks[k])
		}
	}
}

// fsck is one run of Fsck.
type fsck struct {
	s       *core.Service
	store   *head.Store
	bodies  *bodies.Store
	opts    FsckOptions
	rep     *FsckReport
	checked map[nokv.RevisionID]bool // revisions whose body was checked
	seen    map[string]bool          // findings already reported, at any root
	objects map[string]bool          // objects counted, at any root

	// Blocks that failed the walk, and the blocks the rows of live
	// revisions name at the roots read (reportBlocks).
	badBlocks  map[string]FsckFinding
	liveBlocks map[string]bool
	incomplete bool // a root's records could not all be read
}

// add records a finding once: the same inconsistency seen at several
// roots is reported at the first.
func (fk *fsck) add(f FsckFinding) {
	id := f.Layer + "\x00" + f.Family + "\x00" + f.Key + "\x00" + f.Record + "\x00" + f.Expected + "\x00" + f.Found
	if fk.seen[id] {
		return
	}
	fk.seen[id] = true
	if len(fk.rep.Findings) >= fk.opts.MaxFindings {
		fk.rep.Truncated = true
		return
	}
	fk.rep.Findings = append(fk.rep.Findings, f)
}

// shortHash shortens a hex hash for a one-line message.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
