package shards

import (
	"errors"
	"fmt"
	"time"
)

// Family is a metadata family, identified by its one-byte tag. Which tags
// exist, what they are called and how their keys shard is the product's
// schema (Schema); the engine owns only its own two families.
type Family uint8

// The engine's own families. Every Schema holds them.
const (
	// CommandDedupe holds the engine's request dedupe records (package
	// head): a 16-byte namespace followed by a non-empty request id.
	CommandDedupe Family = 0x14
	// System holds the schema marker and the engine's own metadata.
	System Family = 0xf0
)

// MinEngineTag is the least tag of the range the engine keeps for its own
// families; a product's families use tags below it.
const MinEngineTag = 0xf0

var (
	// ErrUnknownFamily is returned for a tag or name that names no family
	// of the schema at hand.
	ErrUnknownFamily = errors.New("unknown family")
	// ErrInvalidSchema is returned by NewSchema for specs that cannot form
	// a schema.
	ErrInvalidSchema = errors.New("invalid schema")
)

// LookupPageBytes is the page bound of the families read only by point
// lookups (FamilySpec.PageBytes): the engine's command_dedupe, and the
// product's that declare it.
const LookupPageBytes = 4 << 10

// engineSpecs are the families the engine adds to every schema.
var engineSpecs = []FamilySpec{
	{Family: CommandDedupe, Name: "command_dedupe", ShardKey: func(key []byte) ([]byte, error) {
		const min = 16 + 1 // namespace, request id
		if len(key) < min {
			return nil, &KeyError{Op: "command_dedupe key", Reason: fmt.Sprintf("%d bytes, want at least %d", len(key), min)}
		}
		return key, nil
	}, PageBytes: LookupPageBytes},
	{Family: System, Name: "system"},
}

// String returns the name of an engine family, or "family(0xNN)" for any
// other tag; a product family's name is its schema's (Schema.Name).
func (f Family) String() string {
	for _, s := range engineSpecs {
		if s.Family == f {
			return s.Name
		}
	}
	return fmt.Sprintf("family(0x%02x)", uint8(f))
}

// FamilySpec is what a product says of one of its families: its tag and
// name, both durable, and how a record key selects its shard.
type FamilySpec struct {
	// Family is the tag, written into every shard object, table and root.
	Family Family
	// Name is the family's tree name: 1 to 64 bytes of a-z, 0-9 and '_'.
	// It names the family's objects in the bucket
	// (objects/{name}/{idx}/{hash}).
	Name string
	// ShardKey checks what the sharding needs of a non-empty record key's
	// shape and returns the part of it that selects the shard; the result
	// may alias key. An error must wrap ErrMalformedKey (a *KeyError
	// does); the schema wraps any other. Nil: the whole key is the shard
	// key.
	ShardKey func(key []byte) ([]byte, error)
	// PrefixKey returns the shard key that every key beginning with
	// prefix shares, if prefix determines one; it must agree with
	// ShardKey. Nil: no prefix does, and every scan merges the family's
	// shards.
	PrefixKey func(prefix []byte) ([]byte, bool)
	// Expire, if set, says whether a record of the family has expired: a
	// row that only serves exact retries, past the window its product
	// documents. The engine asks it only when a fold rewrites the shard
	// object or page that holds the record anyway (and of a delta's
	// record the fold applies), and leaves an expired record out of what
	// it writes. It never rewrites an object only to expire records, and
	// reads never ask it, so a record stays visible after its window
	// until a fold rewrites its page: a window is a least lifetime, not
	// an exact one. The rule sees the newest value of the key (a delete
	// or a later put in a delta has already replaced an older one). It
	// must be a pure function of its arguments, and should use only
	// at.Sequence so that a fold of one root and batch writes the same
	// records on every attempt. Nil: the family's records never expire.
	// The engine's own command_dedupe rule is package head's.
	Expire ExpireFunc
	// PageBytes, if positive, bounds the family's pages below the store's
	// page bound (head.Options.PageBytes) when it is smaller: a family
	// read by point lookups, never scanned by a listing, pays per page a
	// fold rewrites for one changed record, and gains nothing from large
	// pages. Like the store's bound, it shapes only what a fold writes.
	PageBytes int64
}

// ExpireFunc reports whether the record (key, value) of a family has
// expired at the fold described by at. It must not modify key or value.
type ExpireFunc func(key, value []byte, at ExpiryClock) bool

// ExpiryClock is what an expiry rule knows of the fold that asks it.
// The engine keeps no time per record: a record that needs its own age
// carries it in its value (a commit sequence, Tx.Sequence in package
// head, or a time, Tx.Now), written by the command that writes it.
type ExpiryClock struct {
	// Sequence is the commit sequence of the fold: the sequence of the
	// root it writes. A record carrying the sequence that wrote it is
	// Sequence - that many commits old.
	Sequence uint64
	// Time is the fold commit's time: the committed_at of the head it
	// writes, read from the writer's clock. Clocks of replicas differ, so
	// a rule over Time should allow for skew.
	Time time.Time
	// DedupeWindow is the number of commits for which the engine keeps
	// a command_dedupe record (head.Options.DedupeWindow): how long an
	// exact retry is recognized. A product rule for rows that serve only
	// exact retries can keep them for the same window.
	DedupeWindow uint64
}

// Schema is an immutable registry of families: the engine's own and those
// a product supplies. The engine decodes only what its schema holds, and
// fails closed with ErrUnknownFamily on anything else. A Schema is safe
// for concurrent use.
type Schema struct {
	specs  [256]*FamilySpec
	list   []Family
	byName map[string]Family
}

// NewSchema returns the schema of the product families specs plus the
// engine's own (CommandDedupe, System). It fails with ErrInvalidSchema on
// a repeated tag or name, a name that is not 1 to 64 bytes of a-z, 0-9 and
// '_', or a spec that takes an engine family's tag or name or a tag from
// MinEngineTag up.
func NewSchema(specs ...FamilySpec) (*Schema, error) {
	s := &Schema{byName: make(map[string]Family, len(specs)+len(engineSpecs))}
	add := func(spec FamilySpec, engine bool) error {
		switch {
		case !engine && (spec.Family >= MinEngineTag || spec.Family == CommandDedupe):
			return fmt.Errorf("shards: new schema: family %q: tag 0x%02x belongs to the engine: %w", spec.Name, uint8(spec.Family), ErrInvalidSchema)
		case !validFamilyName(spec.Name):
			return fmt.Errorf("shards: new schema: family tag 0x%02x: bad name %q: %w", uint8(spec.Family), spec.Name, ErrInvalidSchema)
		case s.specs[spec.Family] != nil:
			return fmt.Errorf("shards: new schema: tag 0x%02x of %q is %q's: %w", uint8(spec.Family), spec.Name, s.specs[spec.Family].Name, ErrInvalidSchema)
		}
		if _, dup := s.byName[spec.Name]; dup {
			return fmt.Errorf("shards: new schema: name %q used twice: %w", spec.Name, ErrInvalidSchema)
		}
		s.specs[spec.Family] = &spec
		s.byName[spec.Name] = spec.Family
		return nil
	}
	for _, spec := range engineSpecs {
		if err := add(spec, true); err != nil {
			return nil, err
		}
	}
	for _, spec := range specs {
		if err := add(spec, false); err != nil {
			return nil, err
		}
	}
	for t, spec := range s.specs {
		if spec != nil {
			s.list = append(s.list, Family(t))
		}
	}
	return s, nil
}

func validFamilyName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Families returns every family of the schema in tag order. The slice is
// a copy.
func (s *Schema) Families() []Family {
	return append([]Family(nil), s.list...)
}

// Known reports whether the schema holds family f.
func (s *Schema) Known(f Family) bool { return s.specs[f] != nil }

// Name returns the name of family f, or "family(0xNN)" for a tag the
// schema does not hold.
func (s *Schema) Name(f Family) string {
	if spec := s.specs[f]; spec != nil {
		return spec.Name
	}
	return fmt.Sprintf("family(0x%02x)", uint8(f))
}

// Expiry returns the expiry rule of family f, nil if it has none or the
// schema does not hold f.
func (s *Schema) Expiry(f Family) ExpireFunc {
	if spec := s.specs[f]; spec != nil {
		return spec.Expire
	}
	return nil
}

// PageBytes returns the page bound family f asks for (FamilySpec.PageBytes):
// 0 if it asks for none or the schema does not hold f.
func (s *Schema) PageBytes(f Family) int64 {
	if spec := s.specs[f]; spec != nil {
		return spec.PageBytes
	}
	return 0
}

// ParseFamily returns the family with tag t, failing closed with
// ErrUnknownFamily for any tag the schema does not hold.
func (s *Schema) ParseFamily(t byte) (Family, error) {
	if !s.Known(Family(t)) {
		return 0, fmt.Errorf("shards: family tag 0x%02x: %w", t, ErrUnknownFamily)
	}
	return Family(t), nil
}

// ByName returns the family with the exact name, failing with
// ErrUnknownFamily for any other name.
func (s *Schema) ByName(name string) (Family, error) {
	f, ok := s.byName[name]
	if !ok {
		return 0, fmt.Errorf("shards: family %q: %w", name, ErrUnknownFamily)
	}
	return f, nil
}
