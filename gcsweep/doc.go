// Package gcsweep owns garbage collection of one logical shard: the walk
// of everything a root reaches (Walk), the pins that keep roots (ListPins)
// and the mark-and-sweep that deletes what nothing keeps (Sweep).
//
// It reads the engine's objects through packages shards and roots and
// knows no product family: what a record references outside the engine
// (the Workbench's artifact blocks) is told to it as a Refs function.
//
// # The walk
//
// Walk visits a root, every root its holds name, their tables, delta
// segments, shard objects, page indexes and pages, and the blocks Refs
// finds in their records. Each distinct object is reported once. A table
// entry carried inline is not an object; its records are still read.
// Without WalkOptions.Verify the walk fetches only what it must decode;
// with it, every object, each checked against its hash or digest.
//
// # Pins
//
// A pin is a create-only canonical JSON object under
// shards.Layout.Pin(name), {"format":"cairn.pin.v1","shard":…,
// "sequence":…,"root":…,"created_unix_ms":…,"note":…}. A sweep keeps
// every pinned root. A pin that does not decode stops a sweep before it
// deletes anything.
//
// # Backups
//
// PinHead pins a store's current head, CreatePin and DeletePin write and
// remove pins (create-only: a pin is never replaced), ReadPin and
// ListPins read them. VerifyPin walks a pinned root with Verify and
// reports every missing or damaged object, going on past each. CopyPin
// copies what a pinned root reaches to another bucket, then the pin,
// then a head (head.WriteHeadAt), so the copy serves the pinned state;
// run again, it writes only what the destination lacks intact. Making a
// pinned state current again is head.Store.RestoreRoot, which relies on
// the pin to keep the objects it references (docs/operations.md).
package gcsweep
