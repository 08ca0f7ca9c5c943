package shards_test

import (
	"errors"
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// engineFamilies are the families the engine adds to every schema.
var engineFamilies = []struct {
	name string
	tag  uint8
}{{"command_dedupe", 0x14}, {"system", 0xf0}}

func TestEngineOnlySchema(t *testing.T) {
	s, err := shards.NewSchema()
	if err != nil {
		t.Fatal(err)
	}
	got := s.Families()
	if len(got) != len(engineFamilies) {
		t.Fatalf("Families() = %v, want the engine's %v", got, engineFamilies)
	}
	for i, f := range got {
		want := engineFamilies[i]
		if s.Name(f) != want.name || uint8(f) != want.tag || f.String() != want.name {
			t.Errorf("family %d = %s/0x%02x (String %q), want %s/0x%02x", i, s.Name(f), uint8(f), f, want.name, want.tag)
		}
	}
	if got, want := uint8(shards.CommandDedupe), uint8(0x14); got != want {
		t.Errorf("CommandDedupe tag = 0x%02x, want 0x%02x", got, want)
	}
	if got, want := uint8(shards.System), uint8(0xf0); got != want {
		t.Errorf("System tag = 0x%02x, want 0x%02x", got, want)
	}
}

func TestSchemaHoldsProductAndEngineFamilies(t *testing.T) {
	want := map[shards.Family]string{}
	for _, spec := range shardstest.Specs() {
		want[spec.Family] = spec.Name
	}
	for _, e := range engineFamilies {
		want[shards.Family(e.tag)] = e.name
	}
	got := schema.Families()
	if len(got) != len(want) {
		t.Fatalf("Families() has %d families, want %d", len(got), len(want))
	}
	for i, f := range got {
		if i > 0 && got[i-1] >= f {
			t.Fatalf("Families() not in tag order: %v", got)
		}
		name := want[f]
		if schema.Name(f) != name || !schema.Known(f) {
			t.Errorf("family 0x%02x = %q (known %v), want %q", uint8(f), schema.Name(f), schema.Known(f), name)
		}
		byName, err := schema.ByName(name)
		if err != nil || byName != f {
			t.Errorf("ByName(%q) = %v, %v; want %v", name, byName, err, f)
		}
		byTag, err := schema.ParseFamily(uint8(f))
		if err != nil || byTag != f {
			t.Errorf("ParseFamily(0x%02x) = %v, %v; want %v", uint8(f), byTag, err, f)
		}
	}
}

func TestNewSchemaRefuses(t *testing.T) {
	whole := func(f shards.Family, name string) shards.FamilySpec { return shards.FamilySpec{Family: f, Name: name} }
	for name, specs := range map[string][]shards.FamilySpec{
		"duplicate tag":         {whole(0x01, "a"), whole(0x01, "b")},
		"duplicate name":        {whole(0x01, "a"), whole(0x02, "a")},
		"command_dedupe's tag":  {whole(shards.CommandDedupe, "dedupe")},
		"system's tag":          {whole(shards.System, "marker")},
		"engine range":          {whole(0xff, "mine")},
		"command_dedupe's name": {whole(0x01, "command_dedupe")},
		"system's name":         {whole(0x01, "system")},
		"empty name":            {whole(0x01, "")},
		"upper case":            {whole(0x01, "Root")},
		"slash":                 {whole(0x01, "a/b")},
		"dot":                   {whole(0x01, ".")},
		"65 bytes":              {whole(0x01, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklm")},
	} {
		if s, err := shards.NewSchema(specs...); !errors.Is(err, shards.ErrInvalidSchema) || s != nil {
			t.Errorf("%s: NewSchema = %v, %v; want ErrInvalidSchema", name, s, err)
		}
	}
	if _, err := shards.NewSchema(whole(0x00, "zero"), whole(0xef, "last_product_tag_0123456789_abcdefghijklmnopqrstuvwxyz_012345678")); err != nil {
		t.Fatalf("tags 0x00 and 0xef with a 64-byte name: %v", err)
	}
}

func TestUnknownFamilyFailsClosed(t *testing.T) {
	known := map[uint8]bool{}
	for _, f := range schema.Families() {
		known[uint8(f)] = true
	}
	for tag := 0; tag < 256; tag++ {
		f, err := schema.ParseFamily(byte(tag))
		if known[uint8(tag)] {
			continue
		}
		if !errors.Is(err, shards.ErrUnknownFamily) || f != 0 {
			t.Errorf("ParseFamily(0x%02x) = %v, %v; want ErrUnknownFamily", tag, f, err)
		}
		if schema.Known(shards.Family(tag)) {
			t.Errorf("Known(0x%02x) = true", tag)
		}
	}
	for _, name := range []string{"", "history", "recovery_outbox", "Fixed16", "fixed16 ", "family(0x42)"} {
		if _, err := schema.ByName(name); !errors.Is(err, shards.ErrUnknownFamily) {
			t.Errorf("ByName(%q) error = %v, want ErrUnknownFamily", name, err)
		}
	}
	if got, want := schema.Name(0x42), "family(0x42)"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
	if got, want := shards.Family(0x42).String(), "family(0x42)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := shardstest.Fixed16.String(), "family(0x01)"; got != want {
		t.Errorf("a product family's String() = %q, want %q: only its schema knows its name", got, want)
	}
}

func TestFamiliesReturnsCopy(t *testing.T) {
	a := schema.Families()
	first := a[0]
	a[0] = shards.System
	if b := schema.Families(); b[0] != first {
		t.Fatalf("Families() shares its slice: first = %v", b[0])
	}
}
