package workbench

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// Fsck checks one deployment root from the bucket up, as the seed's
// qualification requirement asks: it recomputes what the records claim
// about each other (strong reference counts, seals, holds) from the
// records themselves and never trusts a listing of the bucket.
//
// # Layers
//
// Fsck checks the head's root and the root of every pin of the shard, and
// the roots their holds name.
//
// The engine layer is head.Check in strict mode: every object those roots
// reach exists, hashes to its name, decodes canonically, and agrees with
// the table or root that names it. Then every object again through
// gcsweep.Walk, which also fetches every block a manifest row names and
// checks the row's slice of it against the row's digest.
//
// The Workbench layer reads the records of each root, and checks the invariants docs/operations.md lists ("What
// fsck checks"): reference counts against RevisionRef rows, GC candidates,
// manifests (and, with FsckOptions.Bodies, each body read whole against
// its digest), paths,
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
	// Empty: the shard has no head yet, so there was nothing to check.
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
	s, err := Open(ctx, b, Options{AgentID: opts.AgentID})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Fsck(ctx, opts)
}

// Fsck checks the Service's deployment root at the current head, at every
// pinned root and at every root a hold of those names. opts.AgentID is ignored: the Service's root is
// checked. It reads straight from the bucket through a Store of its own,
// so nothing the Service cached is trusted.
func (s *Service) Fsck(ctx context.Context, opts FsckOptions) (*FsckReport, error) {
	start := time.Now()
	if opts.MaxFindings <= 0 {
		opts.MaxFindings = 1000
	}
	b := s.store.Bucket()
	store, err := head.Open(ctx, b, s.store.ID(), s.store.Schema(), head.Options{})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	rep := &FsckReport{AgentID: s.opts.AgentID, Shard: store.ID().String(), Records: map[string]int{}}
	fk := &fsck{
		s: s, store: store, opts: opts, rep: rep,
		bodies:  bodies.New(b, store.Layout(), bodies.Options{CacheBytes: -1}),
		checked: map[nokv.RevisionID]bool{},
		seen:    map[string]bool{},
		objects: map[string]bool{},
	}
	sn, err := store.PinOrEmpty(ctx)
	if err != nil {
		return nil, err
	}
	if sn.Empty() {
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
	for _, h := range tops {
		if err := fk.checkObjects(ctx, h); err != nil {
			return nil, err
		}
	}

	// The Workbench layer, root by root: the head's first, then the
	// pinned ones, and each held root once.
	todo := slices.Clone(tops)
	done := map[digest.Hash]bool{}
	for len(todo) > 0 {
		h := todo[0]
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
		for _, hold := range at.Root().Holds {
			todo = append(todo, hold.Root)
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// checkObjects is the engine layer at root h: head.Check, strict, of every
// object h and the roots its holds name reach; then every object again
// through gcsweep.Walk, blocks included, each block's slice checked
// against the digest its manifest row gives. Engine objects that fail
// the walk were reported by Check, in its words; only blocks are
// reported from the walk. Objects are counted once across roots.
func (fk *fsck) checkObjects(ctx context.Context, h digest.Hash) error {
	b, layout, rep := fk.store.Bucket(), fk.store.Layout(), fk.rep
	if err := head.Check(ctx, b, layout, h, head.CheckOptions{Strict: true, MaxFindings: fk.opts.MaxFindings}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, e := range unjoin(err) {
			fk.add(FsckFinding{Layer: "engine", Root: h.String(), Expected: "a sound object", Found: e.Error()})
		}
	}
	walkOpts := gcsweep.WalkOptions{
		Verify: true, RefFamilies: BlockRefFamilies,
		OnError: func(o gcsweep.Object, err error) error {
			if o.Kind == gcsweep.KindBlock {
				fk.add(FsckFinding{Layer: "block", Root: h.String(),
					Family: layout.Schema().Name(nokv.FamilyArtifactManifest), Record: "block " + o.Key,
					Expected: "the block, its bytes matching " + o.Digest, Found: err.Error()})
			}
			return nil
		},
	}
	return gcsweep.Walk(ctx, b, layout, h, BlockRefs, walkOpts, func(o gcsweep.Object) error {
		if fk.objects[o.Key] {
			return nil
		}
		fk.objects[o.Key] = true
		rep.Objects++
		rep.Bytes += o.Size
		if o.Kind == gcsweep.KindBlock {
			rep.Blocks++
			rep.BlockBytes += o.Size
		}
		return nil
	})
}

// unjoin splits the error head.Check joined.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// fsck is one run of Fsck.
type fsck struct {
	s       *Service
	store   *head.Store
	bodies  *bodies.Store
	opts    FsckOptions
	rep     *FsckReport
	checked map[nokv.RevisionID]bool // revisions whose body was checked
	seen    map[string]bool          // findings already reported, at any root
	objects map[string]bool          // objects counted, at any root
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

// rootCheck holds the records of one root, decoded, and reports findings
// at that root.
type rootCheck struct {
	fk   *fsck
	sn   *head.Snapshot
	root nokv.RootID

	workspaces map[string]wsRow
	claims     map[nokv.IncarnationID]string
	paths      map[string]pathRow // by pathID
	dirs       map[string]dirRow  // by pathID
	revisions  map[nokv.RevisionID]revRow
	manifests  map[nokv.RevisionID][]manifestRow
	refs       []refRow
	candidates []candidateRow
	commits    map[nokv.CommitID]commitRow
	members    map[nokv.CommitID][]memberRow
	consumers  []consumerRow
	heads      []headRow
	snapshots  map[nokv.SnapshotID]snapshotRow
	aliases    []aliasRow
	holds      []historyHoldRow
	index      map[string]indexRow // by the key's bytes
}

type (
	wsRow struct {
		key []byte
		v   nokv.WorkspaceCurrent
	}
	pathRow struct {
		key []byte
		k   nokv.PathCurrentKey
		v   nokv.PathEntry
	}
	dirRow struct {
		key []byte
		k   nokv.PathDirectoryKey
	}
	revRow struct {
		key []byte
		v   nokv.ArtifactRevision
	}
	manifestRow struct {
		key []byte
		k   nokv.ArtifactManifestKey
		v   nokv.ArtifactManifestEntry
	}
	refRow struct {
		key []byte
		k   nokv.RevisionRefKey
		v   nokv.RevisionRef
	}
	candidateRow struct {
		key []byte
		k   nokv.GcCandidateKey
		v   nokv.GcCandidate
	}
	commitRow struct {
		key []byte
		v   nokv.Commit
	}
	memberRow struct {
		key []byte
		k   nokv.CommitMemberKey
		v   nokv.CommitMember
	}
	consumerRow struct {
		key []byte
		k   nokv.CommitConsumerKey
		v   nokv.CommitConsumer
	}
	headRow struct {
		key []byte
		k   nokv.WorkbenchCommitHeadKey
		v   nokv.WorkbenchCommitHead
	}
	snapshotRow struct {
		key []byte
		k   nokv.SnapshotRefKey
		v   nokv.SnapshotRef
	}
	aliasRow struct {
		key []byte
		k   nokv.SnapshotAliasKey
		v   nokv.SnapshotAlias
	}
	historyHoldRow struct {
		key []byte
		k   nokv.HistoryHoldKey
		v   nokv.HistoryHold
	}
	indexRow struct {
		key []byte
		k   nokv.SecondaryIndexKey
		v   nokv.SecondaryIndexEntry
	}
)

// pathID identifies a path of an incarnation within one root.
func pathID(inc nokv.IncarnationID, path []string) string {
	return string(inc[:]) + LogicalPath(path)
}

// finding adds a Workbench finding at this root.
func (c *rootCheck) finding(f shards.Family, key []byte, record, expected, found string) {
	c.fk.add(FsckFinding{
		Layer: "workbench", Root: c.sn.RootHash().String(),
		Family: c.fk.store.Layout().Schema().Name(f), Record: record, Key: hex.EncodeToString(key),
		Expected: expected, Found: found,
	})
}

// checkRoot loads the records of the root sn names and checks them.
func (fk *fsck) checkRoot(ctx context.Context, sn *head.Snapshot) error {
	c := &rootCheck{
		fk: fk, sn: sn, root: fk.s.root,
		workspaces: map[string]wsRow{},
		claims:     map[nokv.IncarnationID]string{},
		paths:      map[string]pathRow{},
		dirs:       map[string]dirRow{},
		revisions:  map[nokv.RevisionID]revRow{},
		manifests:  map[nokv.RevisionID][]manifestRow{},
		commits:    map[nokv.CommitID]commitRow{},
		members:    map[nokv.CommitID][]memberRow{},
		snapshots:  map[nokv.SnapshotID]snapshotRow{},
		index:      map[string]indexRow{},
	}
	complete, err := c.load(ctx)
	if err != nil {
		return err
	}
	if !complete {
		// A family could not be read (the engine layer says why): the
		// cross-checks would report what is missing as inconsistent.
		return nil
	}
	c.checkWorkspaces()
	c.checkPaths()
	c.checkRevisions()
	c.checkManifests()
	c.checkCommits()
	c.checkSnapshots()
	return c.checkBodies(ctx)
}

// scan reads every record of family f in the root and hands each to fn,
// counting them. A record fn cannot decode is a finding. It reports false
// when the family could not be read.
func (c *rootCheck) scan(ctx context.Context, f shards.Family, fn func(key, value []byte) error) (bool, error) {
	recs, err := c.sn.Scan(ctx, f, nokv.RootPrefix(c.root), nil, 0)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		c.finding(f, nil, "every record", "a readable family", err.Error())
		return false, nil
	}
	c.fk.rep.Records[c.fk.store.Layout().Schema().Name(f)] += len(recs)
	for _, r := range recs {
		if err := fn(r.Key, r.Value); err != nil {
			c.finding(f, r.Key, "record", "a record that decodes", err.Error())
		}
	}
	return true, nil
}

// load reads the families the checks use.
func (c *rootCheck) load(ctx context.Context) (bool, error) {
	type family struct {
		f  shards.Family
		fn func(key, value []byte) error
	}
	fams := []family{
		{nokv.FamilyWorkspaceCurrent, func(key, value []byte) error {
			k, err := nokv.ParseWorkspaceCurrentKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeWorkspaceCurrent(value)
			if err != nil {
				return err
			}
			c.workspaces[k.WorkbenchID] = wsRow{key, v}
			return nil
		}},
		{nokv.FamilyWorkspaceIncarnationClaim, func(key, value []byte) error {
			k, err := nokv.ParseWorkspaceIncarnationClaimKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeWorkspaceIncarnationClaim(value)
			if err != nil {
				return err
			}
			c.claims[k.Incarnation] = v.WorkbenchID
			return nil
		}},
		{nokv.FamilyPathCurrent, func(key, value []byte) error {
			k, err := nokv.ParsePathCurrentKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodePathEntry(value)
			if err != nil {
				return err
			}
			c.paths[pathID(k.Incarnation, k.Path)] = pathRow{key, k, v}
			return nil
		}},
		{nokv.FamilyPathDirectory, func(key, value []byte) error {
			k, err := nokv.ParsePathDirectoryKey(key)
			if err != nil {
				return err
			}
			if _, err := nokv.DecodePathDirectory(value); err != nil {
				return err
			}
			c.dirs[pathID(k.Incarnation, k.Path)] = dirRow{key, k}
			return nil
		}},
		{nokv.FamilyArtifactRevision, func(key, value []byte) error {
			k, err := nokv.ParseArtifactRevisionKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeArtifactRevision(value)
			if err != nil {
				return err
			}
			c.revisions[k.Revision] = revRow{key, v}
			return nil
		}},
		{nokv.FamilyArtifactManifest, func(key, value []byte) error {
			k, err := nokv.ParseArtifactManifestKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeArtifactManifestEntry(value)
			if err != nil {
				return err
			}
			c.manifests[k.Revision] = append(c.manifests[k.Revision], manifestRow{key, k, v})
			return nil
		}},
		{nokv.FamilyRevisionRef, func(key, value []byte) error {
			k, err := nokv.ParseRevisionRefKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeRevisionRef(value)
			if err != nil {
				return err
			}
			c.refs = append(c.refs, refRow{key, k, v})
			return nil
		}},
		{nokv.FamilyGcCandidate, func(key, value []byte) error {
			k, err := nokv.ParseGcCandidateKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeGcCandidate(value)
			if err != nil {
				return err
			}
			c.candidates = append(c.candidates, candidateRow{key, k, v})
			return nil
		}},
		{nokv.FamilyCommit, func(key, value []byte) error {
			k, err := nokv.ParseCommitKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeCommit(value)
			if err != nil {
				return err
			}
			c.commits[k.Commit] = commitRow{key, v}
			return nil
		}},
		{nokv.FamilyCommitMember, func(key, value []byte) error {
			k, err := nokv.ParseCommitMemberKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeCommitMember(value)
			if err != nil {
				return err
			}
			c.members[k.Commit] = append(c.members[k.Commit], memberRow{key, k, v})
			return nil
		}},
		{nokv.FamilyCommitConsumer, func(key, value []byte) error {
			k, err := nokv.ParseCommitConsumerKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeCommitConsumer(value)
			if err != nil {
				return err
			}
			c.consumers = append(c.consumers, consumerRow{key, k, v})
			return nil
		}},
		{nokv.FamilyWorkbenchCommitHead, func(key, value []byte) error {
			k, err := nokv.ParseWorkbenchCommitHeadKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeWorkbenchCommitHead(value)
			if err != nil {
				return err
			}
			c.heads = append(c.heads, headRow{key, k, v})
			return nil
		}},
		{nokv.FamilySnapshotRef, func(key, value []byte) error {
			k, err := nokv.ParseSnapshotRefKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeSnapshotRef(value)
			if err != nil {
				return err
			}
			if _, dup := c.snapshots[k.Snapshot]; dup {
				return fmt.Errorf("snapshot id %s is taken twice", k.Snapshot)
			}
			c.snapshots[k.Snapshot] = snapshotRow{key, k, v}
			return nil
		}},
		{nokv.FamilySnapshotAlias, func(key, value []byte) error {
			k, err := nokv.ParseSnapshotAliasKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeSnapshotAlias(value)
			if err != nil {
				return err
			}
			c.aliases = append(c.aliases, aliasRow{key, k, v})
			return nil
		}},
		{nokv.FamilyHistoryHold, func(key, value []byte) error {
			k, err := nokv.ParseHistoryHoldKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeHistoryHold(value)
			if err != nil {
				return err
			}
			c.holds = append(c.holds, historyHoldRow{key, k, v})
			return nil
		}},
		{nokv.FamilySecondaryIndex, func(key, value []byte) error {
			k, err := nokv.ParseSecondaryIndexKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeSecondaryIndexEntry(value)
			if err != nil {
				return err
			}
			c.index[string(key)] = indexRow{key, k, v}
			return nil
		}},
	}
	// Families no check reads yet still have to decode.
	fams = append(fams,
		family{nokv.FamilyOperation, func(key, value []byte) error {
			k, err := nokv.ParseOperationKey(key)
			if err != nil {
				return err
			}
			switch k.Kind {
			case nokv.OperationKindPublish:
				_, err = nokv.DecodePublishOperation(value)
			case nokv.OperationKindBuildCommit:
				_, err = nokv.DecodeBuildCommitOperation(value)
			case nokv.OperationKindCommitRetire:
				_, err = nokv.DecodeCommitRetireOperation(value)
			}
			// Restore and Gc operations have no codec here yet; their
			// keys parsed.
			return err
		}},
		family{nokv.FamilyStagedObject, func(key, value []byte) error {
			if _, err := nokv.ParseStagedObjectKey(key); err != nil {
				return err
			}
			_, err := nokv.DecodeStagedObject(value)
			return err
		}},
		family{nokv.FamilyChangeEvent, func(key, value []byte) error {
			if _, err := nokv.ParseChangeEventKey(key); err != nil {
				return err
			}
			_, err := nokv.DecodeChangeEvent(value)
			return err
		}},
		family{nokv.FamilyLeaseClock, func(key, value []byte) error {
			if _, err := nokv.ParseLeaseClockKey(key); err != nil {
				return err
			}
			_, err := nokv.DecodeLeaseClock(value)
			return err
		}},
	)
	complete := true
	for _, f := range fams {
		ok, err := c.scan(ctx, f.f, f.fn)
		if err != nil {
			return false, err
		}
		complete = complete && ok
	}
	// Manifest rows in index order (a scan returns them so; sorting makes
	// the check independent of that).
	for _, rows := range c.manifests {
		slices.SortFunc(rows, func(a, b manifestRow) int { return cmpU64(a.k.ObjectIndex, b.k.ObjectIndex) })
	}
	return complete, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// shortHash shortens a hex hash for a one-line message.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
