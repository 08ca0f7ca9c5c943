package roots

// What a root's holds keep: one rule for the one walker of the object
// graph (walk.Walk), which the sweep's mark, head.Check, cairn fsck, pin
// verify and pin copy all use.

// Reach says how a walk came to a root, which decides what the root's
// holds keep.
type Reach uint8

const (
	// ReachKept: the root is kept in its own right: the head, a root
	// that was the head within the grace period, a pinned root, or the
	// root a walk starts from.
	ReachKept Reach = iota
	// ReachHeld: the root is named by a hold of a kept root (a snapshot's
	// frozen state, the source of a restore in flight).
	ReachHeld
)

// KeptHolds returns the holds that keep other roots when r was reached
// as reach: all of r's holds for a kept root, none for a held one. Each
// root they name is reached as ReachHeld, with everything it reaches.
//
// Holds keep one level. A held root is read only by the frozen reads of
// whatever holds it, which read its records and never its holds; the
// roots its own holds name (the snapshots alive when it was taken) are
// therefore not kept through it. So a snapshot retired since keeps
// nothing, however many snapshots were taken while it was alive. A
// pinned root is kept in its own right: a pin keeps the roots its holds
// name, so that a copy of the pin still serves the snapshots alive at
// the pin.
func (r *Root) KeptHolds(reach Reach) []Hold {
	if reach != ReachKept {
		return nil
	}
	return r.Holds
}
