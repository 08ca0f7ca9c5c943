package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/cmd/cairn/internal/progress"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench"
)

func init() {
	register("recover", "give a deployment root whose head is lost a head naming a verified root", runRecover)
}

// runRecover makes a verified root current again for a deployment root
// whose head is missing while committed objects remain (a lost head: every
// call fails with ObjectUnavailable, gc refuses to run):
//
//	cairn recover [--bucket URL] [--agent ID] [--pin NAME | --root HASH] [--dry-run] [--json]
//
// By default it chooses the newest root that is provably committed: a
// root in the bucket that another root names as its parent, that a pin
// names, or that a hold of such a root names. A root with no such
// evidence may be the staged root of an attempt whose head write never
// landed, whose commands were told they failed: making it current would
// apply them. The lost head's own root is among those (no commit came
// after it), so the default choice may be one commit behind what the
// lost head named; the command lists every newer root without evidence,
// and --root HASH makes one of them current when the operator knows it
// was committed. --pin NAME makes the pin's root current.
//
// Before it writes, it verifies the chosen root's whole state with one
// verifying walk (gcsweep.VerifyRoot, as pin verify does): the checks of
// the engine's strict Check of every object it reaches, and every block
// its manifests name against its digest. Any problem refuses the recovery and nothing is written. Then it
// creates the head, create-only, naming that root with the root's own
// sequence and nonce and no recent nonces (head.WriteHeadAt). A head that
// exists is never replaced: recover refuses.
//
// Exit status (see exit.go): 0 when the head was written (or, with
// --dry-run, would be); 1 when recovery was refused (a head exists,
// nothing to recover, no provable root, a root that does not verify, a
// pin or root that is not there); 2 for a usage error; 3 for a bucket that
// does not exist, cannot be reached or refuses the credentials.
func runRecover(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("recover", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	bucketURL := fs.String("bucket", "", "bucket URL (default: file://$PWD/"+defaultDataDir+", created if missing)")
	agent := fs.String("agent", workbench.DefaultAgentID, "agent id: recover the deployment root /agents/ID/wb")
	pinName := fs.String("pin", "", "make this pin's root current")
	rootHex := fs.String("root", "", "make this root (64 hex digits) current")
	dryRun := fs.Bool("dry-run", false, "choose and verify, write nothing")
	asJSON := fs.Bool("json", false, "print the outcome as one JSON object")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: cairn recover [--bucket URL] [--agent ID] [--pin NAME | --root HASH] [--dry-run] [--json]")
		fs.PrintDefaults()
	}
	if _, code, done := parseFlags(e, fs, args); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "cairn recover: "+format+"\n", a...)
		fs.Usage()
		return exitUsage
	}
	if fs.NArg() != 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if err := nonEmptyFlags(fs, "bucket", "agent", "pin", "root"); err != nil {
		return usageErr("%v", err)
	}
	if *pinName != "" && *rootHex != "" {
		return usageErr("--pin and --root exclude each other")
	}
	layout, err := workbench.Layout(*agent)
	if err != nil {
		var werr *workbench.Error
		if errors.As(err, &werr) {
			return usageErr("--agent: %s", werr.Message)
		}
		return usageErr("--agent: %v", err)
	}
	var want digest.Hash
	if *rootHex != "" {
		if want, err = digest.Parse(*rootHex); err != nil || want.IsZero() {
			return usageErr("--root %q: want 64 lowercase hex digits", *rootHex)
		}
	}
	if *pinName != "" {
		if _, err := layout.Pin(*pinName); err != nil {
			return usageErr("--pin %q: letters, digits, '.', '_' and '-', at most 128", *pinName)
		}
	}

	b, url, code, err := openBucket(ctx, *bucketURL)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn recover: %v\n", err)
		return code
	}
	defer b.Close()
	svc, err := workbench.Open(ctx, b, workbench.Options{AgentID: *agent})
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn recover: open %s: %v\n", url, err)
		return exitFailed
	}
	defer svc.Close()
	r := &recovery{e: e, b: b, store: svc.Store(), out: recoverOutput{Agent: *agent, Shard: layout.ID().String(), DryRun: *dryRun}}
	code = r.run(ctx, *pinName, want)
	if *asJSON {
		line, err := json.Marshal(r.out)
		if err != nil {
			fmt.Fprintf(e.stderr, "cairn recover: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(e.stdout, "%s\n", line)
	} else {
		r.out.print(e.stdout, url)
	}
	return code
}

// recoverOutput is what recover found, chose and did; --json prints it.
type recoverOutput struct {
	Agent  string `json:"agent"`
	Shard  string `json:"shard"`
	DryRun bool   `json:"dry_run"`
	// Roots counts the roots in the bucket; Proven those with evidence
	// of a commit.
	Roots  int `json:"roots"`
	Proven int `json:"proven"`
	// Chosen is the root made current (or, refused, the one that would
	// have been), Why how it was chosen.
	Chosen *recoverRoot `json:"chosen,omitempty"`
	Why    string       `json:"why,omitempty"`
	// Unproven are the roots newer than the chosen one without evidence
	// of a commit, newest first.
	Unproven []recoverRoot `json:"unproven"`
	// Objects and Bytes are what the verification read, blocks
	// included; Problems what it found.
	Objects  int64    `json:"objects"`
	Bytes    int64    `json:"bytes"`
	Problems []string `json:"problems"`
	Written  bool     `json:"written"`
	// Head and Sequence are the head written: the chosen root, or, when
	// the bucket holds later roots, a root of the chosen state above them
	// all (head.WriteHeadAbove).
	Head     string `json:"head,omitempty"`
	Sequence uint64 `json:"sequence,omitempty"`
	Refused  string `json:"refused,omitempty"`
}

// recoverRoot is one root in the bucket.
type recoverRoot struct {
	Root     string    `json:"root"`
	Sequence uint64    `json:"sequence"`
	Parent   string    `json:"parent"`
	Stored   time.Time `json:"stored"`             // the root object's store time
	Evidence string    `json:"evidence,omitempty"` // why it is known committed
}

func (o *recoverOutput) print(w io.Writer, url string) {
	fmt.Fprintf(w, "bucket:    %s\n", url)
	fmt.Fprintf(w, "agent:     %s (shard %s)\n", o.Agent, o.Shard)
	if o.Roots > 0 {
		fmt.Fprintf(w, "roots:     %d in the bucket, %d proven committed\n", o.Roots, o.Proven)
	}
	if c := o.Chosen; c != nil {
		fmt.Fprintf(w, "chosen:    root %s, sequence %d (%s)\n", c.Root, c.Sequence, o.Why)
	}
	if len(o.Unproven) > 0 {
		fmt.Fprintf(w, "unproven:  %d newer roots without evidence of a commit (an attempt that never landed, or the lost head's own root); --root HASH makes one current:\n", len(o.Unproven))
		for _, u := range o.Unproven {
			fmt.Fprintf(w, "           sequence %d  root %s  parent %s  stored %s\n", u.Sequence, u.Root, u.Parent, u.Stored.UTC().Format(time.RFC3339))
		}
	}
	if o.Objects > 0 || len(o.Problems) > 0 {
		verdict := "intact"
		if len(o.Problems) > 0 {
			verdict = fmt.Sprintf("%d problems", len(o.Problems))
		}
		fmt.Fprintf(w, "verified:  %d objects, %s, blocks included: %s\n", o.Objects, progress.Bytes(o.Bytes), verdict)
		for _, p := range o.Problems {
			fmt.Fprintf(w, "           %s\n", p)
		}
	}
	switch {
	case o.Refused != "":
		fmt.Fprintf(w, "result:    refused: %s; nothing written\n", o.Refused)
	case o.DryRun:
		fmt.Fprintf(w, "result:    dry run: a head naming root %s at sequence %d would be written\n", o.Chosen.Root, o.Chosen.Sequence)
	case o.Written && o.Head == o.Chosen.Root:
		fmt.Fprintf(w, "result:    head written: sequence %d, root %s\n", o.Sequence, o.Head)
	case o.Written:
		fmt.Fprintf(w, "result:    head written: sequence %d, root %s, the chosen state above every later root of the bucket (its parent %s)\n", o.Sequence, o.Head, o.Chosen.Root)
	}
}

// recovery is one run of cairn recover.
type recovery struct {
	e     *env
	b     bucket.Bucket
	store *head.Store
	out   recoverOutput
}

// refuse records why nothing is written and returns exitFailed, or
// exitStore when the bucket could not be used.
func (r *recovery) refuse(err error, format string, a ...any) int {
	r.out.Refused = fmt.Sprintf(format, a...)
	if err != nil {
		fmt.Fprintf(r.e.stderr, "cairn recover: %v\n", err)
		if storeError(err) {
			return exitStore
		}
	}
	return exitFailed
}

func (r *recovery) run(ctx context.Context, pinName string, want digest.Hash) int {
	layout, sc := r.store.Layout(), r.store.Schema()
	h, _, err := head.ReadHead(ctx, r.b, layout, sc.Marker)
	switch {
	case err == nil:
		return r.refuse(nil, "the head exists (sequence %d, root %q): recover only gives a head to a deployment root whose head is missing", h.Sequence, h.Root)
	case !errors.Is(err, head.ErrNoHead):
		return r.refuse(err, "the head cannot be read")
	}
	written, err := head.HasObjects(ctx, r.b, layout)
	if err != nil {
		return r.refuse(err, "the shard cannot be listed")
	}
	if !written {
		return r.refuse(nil, "the agent has no store here: nothing to recover")
	}
	all, err := listRoots(ctx, r.b, layout)
	if err != nil {
		return r.refuse(err, "the roots cannot be read")
	}
	pins, err := gcsweep.ListPins(ctx, r.b, layout)
	if err != nil {
		return r.refuse(err, "the pins cannot be read")
	}
	proven := provenRoots(all, pins)
	r.out.Roots, r.out.Proven = len(all), len(proven)

	var chosen digest.Hash
	switch {
	case pinName != "":
		p, err := gcsweep.ReadPin(ctx, r.b, layout, pinName)
		if err != nil {
			return r.refuse(err, "pin %s cannot be read", pinName)
		}
		chosen, r.out.Why = p.RootHash, "the root of pin "+pinName
	case !want.IsZero():
		chosen, r.out.Why = want, "named by --root"
	default:
		var best *roots.Root
		for h, ev := range proven {
			if rt := all[h]; best == nil || rt.root.Sequence > best.Sequence {
				best, chosen, r.out.Why = rt.root, h, "the newest root proven committed: "+ev
			}
		}
		if best == nil {
			return r.refuse(nil, "no root in the bucket is proven committed (no root names a parent, no pin, no hold); name one with --root HASH")
		}
		for h, ev := range proven {
			if h != chosen && all[h].root.Sequence == best.Sequence {
				return r.refuse(nil, "roots %s and %s are both proven committed at sequence %d (%s); name one with --root HASH", chosen, h, best.Sequence, ev)
			}
		}
	}
	rt, ok := all[chosen]
	if !ok {
		return r.refuse(nil, "root %s is not in the bucket (or does not decode)", chosen)
	}
	r.out.Chosen = describeRoot(chosen, rt, proven[chosen])
	for h, other := range all {
		if _, ok := proven[h]; !ok && other.root.Sequence > rt.root.Sequence {
			r.out.Unproven = append(r.out.Unproven, *describeRoot(h, other, ""))
		}
	}
	slices.SortFunc(r.out.Unproven, func(a, b recoverRoot) int {
		return cmp.Or(cmp.Compare(b.Sequence, a.Sequence), strings.Compare(a.Root, b.Root))
	})

	// Verify the whole state before anything is written: one verifying
	// walk (the checks of a strict head.Check, and every block).
	vrep, err := gcsweep.VerifyRoot(ctx, r.b, layout, chosen, workbench.BlockRefs, gcsweep.VerifyOptions{})
	if err != nil {
		return r.refuse(err, "root %s could not be verified", chosen)
	}
	r.out.Objects, r.out.Bytes = vrep.Objects, vrep.Bytes
	for _, p := range vrep.Problems {
		r.out.Problems = append(r.out.Problems, p.String())
	}
	if len(r.out.Problems) > 0 {
		return r.refuse(nil, "root %s is not whole", chosen)
	}
	if r.out.DryRun {
		return exitOK
	}
	// The head's commit time: when the store wrote the root, the closest
	// to its commit that the bucket records.
	committed := rt.stored
	if committed.IsZero() {
		committed = time.Now()
	}
	// Every root and pin of the bucket must be at or below the new head,
	// or the roots of the abandoned later history would read as a head
	// put back (gcsweep.ErrRollback): above them, a root of the chosen
	// state's tables is written, its parent the chosen root.
	var above uint64
	for _, other := range all {
		above = max(above, other.root.Sequence)
	}
	for _, p := range pins {
		above = max(above, p.Sequence)
	}
	wrote, err := head.WriteHeadAbove(ctx, r.b, layout.ID(), sc, chosen, above, committed)
	if err != nil {
		return r.refuse(err, "the head could not be written")
	}
	r.out.Written = true
	r.out.Sequence = wrote.Sequence
	r.out.Head = wrote.Root
	return exitOK
}

// storedRoot is a root in the bucket and its object's store time.
type storedRoot struct {
	root   *roots.Root
	stored time.Time
}

// listRoots reads every root of the shard: each listed key the layout
// parses as a root, fetched and checked against its hash. A root that
// does not read or decode is left out: it cannot be made current.
func listRoots(ctx context.Context, b bucket.Bucket, layout shards.Layout) (map[digest.Hash]storedRoot, error) {
	prefix := strings.TrimSuffix(layout.Root(digest.Hash{}), digest.Hash{}.String())
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	out := map[digest.Hash]storedRoot{}
	for _, o := range objs {
		k, err := shards.ParseObjectKey(layout.Schema(), o.Key)
		if err != nil || k.Kind != shards.KindRoot || k.Shard != layout.ID() {
			continue
		}
		body, _, err := b.Get(ctx, o.Key)
		if errors.Is(err, bucket.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rt, err := roots.DecodeRoot(layout.Schema(), body, k.Hash)
		if err != nil {
			continue
		}
		out[k.Hash] = storedRoot{root: rt, stored: o.ModTime}
	}
	return out, nil
}

// provenRoots returns the roots in all with evidence of a commit, and the
// evidence: another root names it as its parent (a writer pinned it as
// the head), a pin names it, or a hold of a proven root names it.
func provenRoots(all map[digest.Hash]storedRoot, pins []gcsweep.Pin) map[digest.Hash]string {
	proven := map[digest.Hash]string{}
	for h, rt := range all {
		if p := rt.root.Parent; !p.IsZero() {
			if _, ok := all[p]; ok {
				proven[p] = fmt.Sprintf("root %s (sequence %d) names it as its parent", h, rt.root.Sequence)
			}
		}
	}
	for _, p := range pins {
		if _, ok := all[p.RootHash]; ok {
			proven[p.RootHash] = "pin " + p.Name + " names it"
		}
	}
	for todo := slices.Collect(maps.Keys(proven)); len(todo) > 0; {
		h := todo[0]
		todo = todo[1:]
		for _, hold := range all[h].root.Holds {
			if _, ok := all[hold.Root]; !ok {
				continue
			}
			if _, done := proven[hold.Root]; !done {
				proven[hold.Root] = fmt.Sprintf("hold %q of proven root %s names it", hold.Owner, h)
				todo = append(todo, hold.Root)
			}
		}
	}
	return proven
}

func describeRoot(h digest.Hash, rt storedRoot, evidence string) *recoverRoot {
	parent := ""
	if !rt.root.Parent.IsZero() {
		parent = rt.root.Parent.String()
	}
	return &recoverRoot{Root: h.String(), Sequence: rt.root.Sequence, Parent: parent, Stored: rt.stored, Evidence: evidence}
}
