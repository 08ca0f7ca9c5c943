package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/progress"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/workbench"
)

func init() {
	register("pin", "create, verify, copy, restore and delete backup pins", runPin)
}

// pinVerbs are the subcommands of `cairn pin`, in the order usage lists
// them.
var pinVerbs = []string{"create", "list", "show", "verify", "copy", "restore", "delete"}

// runPin runs one pin subcommand:
//
//	cairn pin create  [--bucket URL] [--agent ID] [--name N] [--note TEXT]
//	cairn pin list    [--bucket URL] [--agent ID] [--json]
//	cairn pin show    [--bucket URL] [--agent ID] NAME
//	cairn pin verify  [--bucket URL] [--agent ID] NAME | --all
//	cairn pin copy    [--bucket URL] [--agent ID] NAME --to URL [--parallel N]
//	cairn pin restore [--bucket URL] [--agent ID] NAME
//	cairn pin delete  [--bucket URL] [--agent ID] NAME
//
// A pin keeps one committed state of an agent's deployment root, and
// everything it reaches, from garbage collection, until it is deleted.
// create pins the current head and prints the pin as one line of JSON;
// list prints one line per pin (one JSON object per line with --json);
// show prints one pin as JSON. verify reads every object the pinned root
// reaches and checks its hash (a block against its digest), prints each
// missing or damaged one and a summary; the blocks it reads are those of
// the revisions the pinned state references (workbench.PinBlockRefs),
// as do copy and restore. copy copies those objects to the bucket --to
// names, then a head naming the pinned root, then the pin, so that
// `cairn serve --bucket URL` serves exactly the pinned state; a copy the
// destination refuses (it has a head naming another root, or another pin
// of that name) is refused before anything is written, and an
// interrupted copy run again copies only what is not yet there intact.
// restore makes the pinned state current again with one ordinary commit
// (history is kept: the previous state is the new root's parent). delete
// removes the pin; the next sweep may then reclaim what only it kept.
//
// Exit status (see exit.go): 0 on success; 1 when the command ran and
// failed (no such pin, a pin that exists already, a verify that found a
// problem, a copy onto a bucket holding another state); 2 for a usage
// error; 3 for a bucket that does not exist, cannot be reached or refuses
// the credentials.
func runPin(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		pinUsage(e.stdout)
		return exitOK
	}
	if len(args) == 0 || !slices.Contains(pinVerbs, args[0]) {
		if len(args) > 0 {
			fmt.Fprintf(e.stderr, "cairn pin: unknown subcommand %q\n", args[0])
		}
		pinUsage(e.stderr)
		return exitUsage
	}
	verb := args[0]
	fs := flag.NewFlagSet("pin "+verb, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	bucketURL := fs.String("bucket", "", "bucket URL (default: file://$PWD/"+defaultDataDir+", created if missing)")
	agent := fs.String("agent", workbench.DefaultAgentID, "agent id: the pins of /agents/ID/wb")
	var name, note, to *string
	var asJSON, all, quiet *bool
	var parallel *int
	switch verb {
	case "create":
		name = fs.String("name", "", "pin name (default: {unix-ms}-{sequence}); letters, digits, '.', '_', '-'")
		note = fs.String("note", "", "a note kept in the pin")
	case "list":
		asJSON = fs.Bool("json", false, "one JSON object per line")
	case "verify":
		all = fs.Bool("all", false, "verify every pin")
	case "copy":
		to = fs.String("to", "", "URL of the bucket to copy to (required)")
		parallel = fs.Int("parallel", copyParallel, "objects copied at once")
		quiet = fs.Bool("quiet", false, "no progress report")
	}
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: %s\n", pinUsageLine(verb))
		fs.PrintDefaults()
	}
	// Flags may come before or after the pin's name.
	var pos []string
	rest := args[1:]
	for {
		if code, done := parseArgs(fs, rest); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if _, code, done := applySettings(e, fs); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "cairn pin %s: "+format+"\n", append([]any{verb}, a...)...)
		fs.Usage()
		return exitUsage
	}
	if err := nonEmptyFlags(fs, "bucket", "agent", "name", "to"); err != nil {
		return usageErr("%v", err)
	}
	wantName := verb == "show" || verb == "copy" || verb == "restore" || verb == "delete" || (verb == "verify" && !*all)
	switch {
	case wantName && len(pos) != 1:
		return usageErr("want one pin name, got %d arguments", len(pos))
	case !wantName && len(pos) != 0:
		return usageErr("unexpected argument %q", pos[0])
	case verb == "copy" && *to == "":
		return usageErr("--to is required")
	case verb == "copy" && *parallel < 1:
		return usageErr("--parallel must be at least 1")
	}
	pinName := ""
	if wantName {
		pinName = pos[0]
	} else if verb == "create" {
		pinName = *name
	}
	layout, err := workbench.Layout(*agent)
	if err != nil {
		return usageErr("--agent: %v", err)
	}
	if pinName != "" {
		if _, err := layout.Pin(pinName); err != nil {
			return usageErr("pin name %q: letters, digits, '.', '_' and '-', at most 128", pinName)
		}
	}

	b, url, code, err := openBucket(ctx, *bucketURL)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn pin %s: %v\n", verb, err)
		return code
	}
	defer b.Close()
	svc, err := workbench.Open(ctx, b, workbench.Options{AgentID: *agent})
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn pin %s: open %s: %v\n", verb, url, err)
		return exitFailed
	}
	defer svc.Close()
	p := &pinCmd{e: e, verb: verb, store: svc.Store()}
	switch verb {
	case "create":
		return p.create(ctx, pinName, *note)
	case "list":
		return p.list(ctx, *asJSON)
	case "show":
		return p.show(ctx, pinName)
	case "verify":
		return p.verify(ctx, pinName)
	case "copy":
		return p.copy(ctx, pinName, *to, *parallel, *quiet)
	case "restore":
		return p.restore(ctx, pinName)
	default:
		return p.delete(ctx, pinName)
	}
}

func pinUsageLine(verb string) string {
	common := "[--bucket URL] [--agent ID]"
	switch verb {
	case "create":
		return "cairn pin create " + common + " [--name N] [--note TEXT]"
	case "list":
		return "cairn pin list " + common + " [--json]"
	case "verify":
		return "cairn pin verify " + common + " NAME | --all"
	case "copy":
		return "cairn pin copy " + common + " NAME --to URL [--parallel N] [--quiet]"
	}
	return "cairn pin " + verb + " " + common + " NAME"
}

func pinUsage(w io.Writer) {
	fmt.Fprintln(w, "usage:")
	for _, v := range pinVerbs {
		fmt.Fprintln(w, "  "+pinUsageLine(v))
	}
}

// pinCmd is one pin subcommand at work on an opened store.
type pinCmd struct {
	e     *env
	verb  string
	store *head.Store
}

// fail reports err and returns its exit code: exitStore when the store
// cannot be used, exitFailed otherwise.
func (p *pinCmd) fail(err error) int {
	fmt.Fprintf(p.e.stderr, "cairn pin %s: %v\n", p.verb, err)
	if storeError(err) {
		return exitStore
	}
	return exitFailed
}

// pinJSON is the one line of canonical JSON a pin prints as: its stored
// members (root as hex, created as Unix milliseconds) and its name.
func pinJSON(pin gcsweep.Pin) string {
	b, err := manifests.Canonical(map[string]any{
		"name":            pin.Name,
		"shard":           pin.Shard,
		"sequence":        pin.Sequence,
		"root":            pin.Root,
		"created_unix_ms": pin.CreatedMS,
		"note":            pin.Note,
	})
	if err != nil {
		panic("cairn pin: encode a checked pin: " + err.Error()) // integers and strings only
	}
	return string(b)
}

func (p *pinCmd) create(ctx context.Context, name, note string) int {
	if len(note) > gcsweep.MaxPinNote {
		fmt.Fprintf(p.e.stderr, "cairn pin create: --note: %d bytes, at most %d\n", len(note), gcsweep.MaxPinNote)
		return exitUsage
	}
	pin, err := gcsweep.PinHead(ctx, p.store, name, note, time.Now())
	if err != nil {
		return p.fail(err)
	}
	fmt.Fprintln(p.e.stdout, pinJSON(pin))
	return exitOK
}

func (p *pinCmd) list(ctx context.Context, asJSON bool) int {
	pins, err := gcsweep.ListPins(ctx, p.store.Bucket(), p.store.Layout())
	if err != nil {
		return p.fail(err)
	}
	for _, pin := range pins {
		if asJSON {
			fmt.Fprintln(p.e.stdout, pinJSON(pin))
			continue
		}
		line := fmt.Sprintf("%s  sequence %d  root %s  created %s", pin.Name, pin.Sequence, pin.Root[:12], pin.Created().UTC().Format(time.RFC3339))
		if pin.Note != "" {
			line += "  " + pin.Note
		}
		fmt.Fprintln(p.e.stdout, line)
	}
	return exitOK
}

func (p *pinCmd) show(ctx context.Context, name string) int {
	pin, err := gcsweep.ReadPin(ctx, p.store.Bucket(), p.store.Layout(), name)
	if err != nil {
		return p.fail(err)
	}
	fmt.Fprintln(p.e.stdout, pinJSON(pin))
	return exitOK
}

func (p *pinCmd) restore(ctx context.Context, name string) int {
	b, layout := p.store.Bucket(), p.store.Layout()
	pin, err := gcsweep.ReadPin(ctx, b, layout, name)
	if err != nil {
		return p.fail(err)
	}
	// The restored objects must stay kept from every sweep until the
	// head names them, however long this process pauses: a keep holds
	// them, checked against each attempt's floor, beside the pin.
	guard, err := gcsweep.NewRestoreGuard(ctx, b, layout, pin, time.Now)
	if err != nil {
		return p.fail(err)
	}
	defer guard.Close(context.WithoutCancel(ctx))
	// Never commit a state with a hole in it: every object the pinned
	// root reaches, blocks included, must read back intact first.
	refs, err := workbench.PinBlockRefs(ctx, p.store, pin.RootHash)
	if err != nil {
		return p.fail(err)
	}
	rep, err := gcsweep.VerifyPin(ctx, b, layout, pin, refs, gcsweep.VerifyOptions{})
	if err != nil {
		return p.fail(err)
	}
	if len(rep.Problems) > 0 {
		for _, prob := range rep.Problems {
			fmt.Fprintf(p.e.stdout, "%s: %s\n", pin.Name, prob)
		}
		fmt.Fprintf(p.e.stderr, "cairn pin restore: pin %s: %d objects missing or damaged; nothing restored\n", name, len(rep.Problems))
		return exitFailed
	}
	sn, committed, err := p.store.RestoreRoot(ctx, pin.RootHash, head.RestoreOptions{Guard: guard.Check, Verified: true, KeepCurrent: workbench.RestoreKeepCurrent})
	if err != nil {
		return p.fail(err)
	}
	// Restoring the current state commits nothing: the head stays.
	previous := sn.Sequence()
	if committed {
		previous-- // the parent's
	}
	out, err := manifests.Canonical(map[string]any{
		"committed":       committed,
		"pin":             name,
		"pinned_sequence": pin.Sequence,
		"root":            sn.RootHash().String(),
		"sequence":        sn.Sequence(),
		"parent":          sn.Root().Parent.String(),
		"previous":        previous,
	})
	if err != nil {
		return p.fail(err)
	}
	fmt.Fprintln(p.e.stdout, string(out))
	return exitOK
}

func (p *pinCmd) delete(ctx context.Context, name string) int {
	if err := gcsweep.DeletePin(ctx, p.store.Bucket(), p.store.Layout(), name); err != nil {
		return p.fail(err)
	}
	fmt.Fprintf(p.e.stdout, "deleted pin %s\n", name)
	return exitOK
}

// copyParallel is the default of `pin copy --parallel`: enough requests
// in flight to hide a remote store's latency, few enough for one host.
const copyParallel = 32

func (p *pinCmd) verify(ctx context.Context, name string) int {
	b, layout := p.store.Bucket(), p.store.Layout()
	var pins []gcsweep.Pin
	if name != "" {
		pin, err := gcsweep.ReadPin(ctx, b, layout, name)
		if err != nil {
			return p.fail(err)
		}
		pins = append(pins, pin)
	} else {
		var err error
		if pins, err = gcsweep.ListPins(ctx, b, layout); err != nil {
			return p.fail(err)
		}
		if len(pins) == 0 {
			fmt.Fprintln(p.e.stdout, "no pins")
			return exitOK
		}
	}
	code := exitOK
	for _, pin := range pins {
		refs, err := workbench.PinBlockRefs(ctx, p.store, pin.RootHash)
		if err != nil {
			return p.fail(err)
		}
		rep, err := gcsweep.VerifyPin(ctx, b, layout, pin, refs, gcsweep.VerifyOptions{})
		if err != nil {
			return p.fail(err)
		}
		for _, prob := range rep.Problems {
			fmt.Fprintf(p.e.stdout, "%s: %s\n", pin.Name, prob)
		}
		verdict := "ok"
		if len(rep.Problems) > 0 {
			verdict = fmt.Sprintf("%d problems", len(rep.Problems))
			code = exitFailed
		}
		fmt.Fprintf(p.e.stdout, "pin %s: sequence %d, %d objects, %s (%d bytes) read in %s: %s\n",
			pin.Name, pin.Sequence, rep.Objects, progress.Bytes(rep.Bytes), rep.Bytes, rep.Elapsed.Round(time.Millisecond), verdict)
	}
	return code
}

func (p *pinCmd) copy(ctx context.Context, name, to string, parallel int, quiet bool) int {
	pin, err := gcsweep.ReadPin(ctx, p.store.Bucket(), p.store.Layout(), name)
	if err != nil {
		return p.fail(err)
	}
	dst, _, code, err := openBucket(ctx, to)
	if err != nil {
		fmt.Fprintf(p.e.stderr, "cairn pin copy: --to: %v\n", err)
		return code
	}
	defer dst.Close()
	var meter *progress.Meter
	opts := gcsweep.VerifyOptions{Concurrency: parallel}
	if !quiet {
		opts.Total = func(n int64) {
			meter = progress.Start(p.e.stderr, progress.Options{Label: "copy", Total: n, Unit: "objects", Terminal: progress.IsTerminal(p.e.stderr)})
		}
		opts.Progress = func(n int64) { meter.Add(1, n) }
	}
	refs, err := workbench.PinBlockRefs(ctx, p.store, pin.RootHash)
	if err != nil {
		return p.fail(err)
	}
	rep, err := gcsweep.CopyPin(ctx, p.store, dst, pin, refs, opts)
	if meter != nil {
		meter.Stop()
	}
	fmt.Fprintf(p.e.stdout, "pin %s: %d objects (%s): %d copied (%s), %d already there and intact\n",
		pin.Name, rep.Objects, progress.Bytes(rep.Bytes), rep.Copied, progress.Bytes(rep.CopiedBytes), rep.Present)
	if err != nil {
		switch {
		case errors.Is(err, head.ErrHeadExists), errors.Is(err, head.ErrSchemaMismatch), errors.Is(err, head.ErrBadHead):
			fmt.Fprintf(p.e.stderr, "cairn pin copy: %s holds another state; copy refused: %v\n", to, err)
			return exitFailed
		case errors.Is(err, gcsweep.ErrPinExists):
			fmt.Fprintf(p.e.stderr, "cairn pin copy: %s holds another pin named %s; copy refused: %v\n", to, name, err)
			return exitFailed
		}
		code := p.fail(err)
		fmt.Fprintln(p.e.stderr, "cairn pin copy: run the same command again to resume")
		return code
	}
	fmt.Fprintf(p.e.stdout, "pin %s and a head at sequence %d written to %s in %s\n", pin.Name, rep.HeadSequence, to, rep.Elapsed.Round(time.Millisecond))
	return exitOK
}
