package shards_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/shards"
)

// seedTable is the seed schema's table of tree names and History
// source-family tags, as written there.
const seedTable = `
root_fence	0x01
workspace_current	0x02
path_current	0x03
artifact_revision	0x04
artifact_manifest	0x05
revision_ref	0x06
commit	0x07
commit_member	0x08
workbench_commit_head	0x09
tag	0x0a
snapshot_ref	0x0b
snapshot_alias	0x0c
history_hold	0x0d
commit_consumer	0x0e
secondary_index	0x0f
change_event	0x10
operation	0x11
restore_member	0x12
staged_object	0x13
command_dedupe	0x14
gc_candidate	0x15
gc_barrier	0x16
workspace_incarnation_claim	0x17
`

// engineFamilies are the families the engine adds to the seed's.
var engineFamilies = []struct {
	name string
	tag  uint8
}{{"system", 0xf0}}

func TestFamilyTableMatchesSeed(t *testing.T) {
	type entry struct {
		name string
		tag  uint8
	}
	var want []entry
	for _, line := range strings.Split(strings.TrimSpace(seedTable), "\n") {
		name, tag, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("bad seed line %q", line)
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(tag, "0x"), 16, 8)
		if err != nil {
			t.Fatalf("bad seed tag %q: %v", tag, err)
		}
		want = append(want, entry{name, uint8(v)})
	}
	for _, e := range engineFamilies {
		want = append(want, entry{e.name, e.tag})
	}
	got := shards.Families()
	if len(got) != len(want) {
		t.Fatalf("Families() has %d families, want %d", len(got), len(want))
	}
	for i, f := range got {
		if f.String() != want[i].name || uint8(f) != want[i].tag {
			t.Errorf("family %d = %s/0x%02x, want %s/0x%02x", i, f, uint8(f), want[i].name, want[i].tag)
		}
		byName, err := shards.ByName(want[i].name)
		if err != nil || byName != f {
			t.Errorf("ByName(%q) = %v, %v; want %v", want[i].name, byName, err, f)
		}
		byTag, err := shards.ParseFamily(want[i].tag)
		if err != nil || byTag != f {
			t.Errorf("ParseFamily(0x%02x) = %v, %v; want %v", want[i].tag, byTag, err, f)
		}
		if !f.Known() {
			t.Errorf("%v.Known() = false", f)
		}
	}
}

func TestFamilyConstants(t *testing.T) {
	for _, c := range []struct {
		f    shards.Family
		name string
	}{
		{shards.RootFence, "root_fence"},
		{shards.HistoryHold, "history_hold"},
		{shards.CommandDedupe, "command_dedupe"},
		{shards.WorkspaceIncarnationClaim, "workspace_incarnation_claim"},
		{shards.System, "system"},
	} {
		if got := c.f.String(); got != c.name {
			t.Errorf("tag 0x%02x String() = %q, want %q", uint8(c.f), got, c.name)
		}
	}
	if got, want := uint8(shards.HistoryHold), uint8(0x0d); got != want {
		t.Errorf("HistoryHold tag = 0x%02x, want 0x%02x", got, want)
	}
	if got, want := uint8(shards.CommandDedupe), uint8(0x14); got != want {
		t.Errorf("CommandDedupe tag = 0x%02x, want 0x%02x", got, want)
	}
}

func TestUnknownFamilyFailsClosed(t *testing.T) {
	known := map[uint8]bool{}
	for _, f := range shards.Families() {
		known[uint8(f)] = true
	}
	for tag := 0; tag < 256; tag++ {
		f, err := shards.ParseFamily(byte(tag))
		if known[uint8(tag)] {
			continue
		}
		if !errors.Is(err, shards.ErrUnknownFamily) || f != 0 {
			t.Errorf("ParseFamily(0x%02x) = %v, %v; want ErrUnknownFamily", tag, f, err)
		}
		if shards.Family(tag).Known() {
			t.Errorf("Family(0x%02x).Known() = true", tag)
		}
	}
	for _, name := range []string{"", "history", "recovery_outbox", "Root_Fence", "root_fence "} {
		if _, err := shards.ByName(name); !errors.Is(err, shards.ErrUnknownFamily) {
			t.Errorf("ByName(%q) error = %v, want ErrUnknownFamily", name, err)
		}
	}
	if got, want := shards.Family(0x42).String(), "family(0x42)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestFamiliesReturnsCopy(t *testing.T) {
	a := shards.Families()
	a[0] = shards.System
	if b := shards.Families(); b[0] != shards.RootFence {
		t.Fatalf("Families() shares its slice: first = %v", b[0])
	}
}
