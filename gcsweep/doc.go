// Package gcsweep owns garbage collection of one logical shard: the pins
// that keep roots (ListPins) and the mark-and-sweep that deletes what
// nothing keeps (Sweep).
//
// It reads the engine's objects through the engine's one graph walker
// (walk.Walk, walk.Walker) and knows no product family: what a record
// references outside the engine (the Workbench's artifact blocks) is
// told to it as a walk.Refs function.
//
// # The walk
//
// The walk (walk.Walk) visits a root, every root its holds name (one
// level: the holds of a held root keep nothing, roots.Root.KeptHolds),
// their tables, delta segments, shard objects, page indexes and pages,
// and the blocks Refs finds in their records. Each distinct object is
// reported once. A table entry carried inline is not an object; its
// records are still read. The sweep's mark walks without
// walk.Options.Verify, fetching only what it must decode; pin verify
// walks with it, checking every object against its hash or digest and
// against the reference that named it, as head.Check and fsck do.
//
// # Pins
//
// A pin is a create-only canonical JSON object under
// shards.Layout.Pin(name), {"format":"cairn.pin.v1","shard":…,
// "sequence":…,"root":…,"created_unix_ms":…,"note":…}. A sweep keeps
// every pinned root. A pin that does not decode stops a sweep before it
// deletes anything.
//
// # The sweep
//
// Sweep lists the shard's objects (everything under its prefix but the
// head, and its artifact blocks), then marks what the head, its holds,
// the heads of the grace period and the pins reach, reads the head again
// (and marks it if it moved), and deletes each listed object that is
// unmarked and older than Options.Grace by the store's clock
// (bucket.Attrs.ModTime; now is read with a probe object), and an HTTP
// server's idempotency records older than Options.IdempotencyRetention
// (a day). It never deletes the head, pins, a key it does not
// recognise, or an object whose listing has no time. Deletes are
// conditional on the listed version where the adapter supports it. A
// shard with objects and no head, a bad pin, a head of another schema
// (Options.Marker) or a missing object the mark reaches stops the sweep
// before any delete. Report.Kept lists every root the sweep kept, with
// its sequence and why (head, grace, held, pinned): what the collection
// of replaced artifact revisions decides from. Why a commit racing the sweep never loses an object
// is argued at the top of sweep.go and in docs/operations.md.
//
// # Backups
//
// PinHead pins a store's current head, CreatePin and DeletePin write and
// remove pins (create-only: a pin is never replaced), ReadPin and
// ListPins read them. VerifyPin walks a pinned root with Verify and
// reports every missing, damaged or inconsistent object, going on past
// each. CopyPin
// first checks that the destination would take it (no head naming
// another root, no other pin of that name; a refused copy writes
// nothing), then copies what a pinned root reaches to another bucket,
// then a head (head.WriteHeadAt), then the pin, so the copy serves the
// pinned state; run again, it writes only what the destination lacks
// intact. Making a
// pinned state current again is head.Store.RestoreRoot, which relies on
// the pin to keep the objects it references (docs/operations.md).
package gcsweep
