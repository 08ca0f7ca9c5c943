package nokv_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
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

// engineFamilies are the families cairn adds to the seed's, in tag
// order: its own derived indexes, then the engine's; command_dedupe is in
// both.
var engineFamilies = []struct {
	name string
	tag  uint8
}{{"path_directory", 0x40}, {"lease_clock", 0x41}, {"system", 0xf0}}

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
	got := fams.Families()
	if len(got) != len(want) {
		t.Fatalf("Families() has %d families, want %d", len(got), len(want))
	}
	for i, f := range got {
		if fams.Name(f) != want[i].name || uint8(f) != want[i].tag {
			t.Errorf("family %d = %s/0x%02x, want %s/0x%02x", i, fams.Name(f), uint8(f), want[i].name, want[i].tag)
		}
		byName, err := fams.ByName(want[i].name)
		if err != nil || byName != f {
			t.Errorf("ByName(%q) = %v, %v; want %v", want[i].name, byName, err, f)
		}
		byTag, err := fams.ParseFamily(want[i].tag)
		if err != nil || byTag != f {
			t.Errorf("ParseFamily(0x%02x) = %v, %v; want %v", want[i].tag, byTag, err, f)
		}
		if !fams.Known(f) {
			t.Errorf("Known(%v) = false", f)
		}
	}
}

func TestFamilyConstants(t *testing.T) {
	for _, c := range []struct {
		f    shards.Family
		name string
	}{
		{nokv.FamilyRootFence, "root_fence"},
		{nokv.FamilyHistoryHold, "history_hold"},
		{shards.CommandDedupe, "command_dedupe"},
		{nokv.FamilyWorkspaceIncarnationClaim, "workspace_incarnation_claim"},
		{shards.System, "system"},
	} {
		if got := fams.Name(c.f); got != c.name {
			t.Errorf("tag 0x%02x String() = %q, want %q", uint8(c.f), got, c.name)
		}
	}
	if got, want := uint8(nokv.FamilyHistoryHold), uint8(0x0d); got != want {
		t.Errorf("HistoryHold tag = 0x%02x, want 0x%02x", got, want)
	}
	if got, want := uint8(shards.CommandDedupe), uint8(0x14); got != want {
		t.Errorf("CommandDedupe tag = 0x%02x, want 0x%02x", got, want)
	}
}

func TestUnknownFamilyFailsClosed(t *testing.T) {
	known := map[uint8]bool{}
	for _, f := range fams.Families() {
		known[uint8(f)] = true
	}
	for tag := 0; tag < 256; tag++ {
		f, err := fams.ParseFamily(byte(tag))
		if known[uint8(tag)] {
			continue
		}
		if !errors.Is(err, shards.ErrUnknownFamily) || f != 0 {
			t.Errorf("ParseFamily(0x%02x) = %v, %v; want ErrUnknownFamily", tag, f, err)
		}
		if fams.Known(shards.Family(tag)) {
			t.Errorf("Known(0x%02x) = true", tag)
		}
	}
	for _, name := range []string{"", "history", "recovery_outbox", "Root_Fence", "root_fence "} {
		if _, err := fams.ByName(name); !errors.Is(err, shards.ErrUnknownFamily) {
			t.Errorf("ByName(%q) error = %v, want ErrUnknownFamily", name, err)
		}
	}
	if got, want := fams.Name(0x42), "family(0x42)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestFamiliesReturnsCopy(t *testing.T) {
	a := fams.Families()
	a[0] = shards.System
	if b := fams.Families(); b[0] != nokv.FamilyRootFence {
		t.Fatalf("Families() shares its slice: first = %v", b[0])
	}
}

func TestSchemaMarker(t *testing.T) {
	sc := nokv.Schema()
	if sc.Marker.SchemaID != "nokv_workspace" || sc.Marker.FormatVersion != 13 || sc.Marker.ValueFormatVersion != 7 {
		t.Fatalf("marker = %+v, want nokv_workspace 13/7", sc.Marker)
	}
	if sc.CompressFrom != 5 || sc.CarrierFrom != 6 || sc.LastKeysFrom != 6 {
		t.Fatalf("CompressFrom = %d, CarrierFrom = %d, LastKeysFrom = %d, want 5, 6 and 6", sc.CompressFrom, sc.CarrierFrom, sc.LastKeysFrom)
	}
	if sc.Families != fams {
		t.Fatal("Schema().Families is not Families()")
	}
	if got, want := len(nokv.Specs()), len(fams.Families())-2; got != want {
		t.Fatalf("Specs() has %d families, want %d (all but the engine's two)", got, want)
	}
}

// TestLayoutKeysUseSeedNames: the bucket keys of shard objects name the
// family by its seed tree name, as they did when the engine carried the
// family table.
func TestLayoutKeysUseSeedNames(t *testing.T) {
	const lsid = "00112233445566778899aabbccddeeff"
	id, err := shards.ParseShardID(lsid)
	if err != nil {
		t.Fatal(err)
	}
	l := shards.NewLayout(fams, id)
	hash := digest.Sum([]byte("x"))
	for _, c := range []struct {
		f    shards.Family
		want string
	}{
		{nokv.FamilyPathCurrent, "shards/" + lsid + "/objects/path_current/0a/" + hash.String()},
		{nokv.FamilyWorkspaceIncarnationClaim, "shards/" + lsid + "/objects/workspace_incarnation_claim/0a/" + hash.String()},
		{shards.CommandDedupe, "shards/" + lsid + "/objects/command_dedupe/0a/" + hash.String()},
		{shards.System, "shards/" + lsid + "/objects/system/0a/" + hash.String()},
	} {
		if got := l.Shard(c.f, 0x0a, hash); got != c.want {
			t.Errorf("Shard(%s) = %q, want %q", fams.Name(c.f), got, c.want)
		}
		k, err := shards.ParseObjectKey(fams, c.want)
		if err != nil || k.Family != c.f || k.Index != 0x0a || k.Hash != hash {
			t.Errorf("ParseObjectKey(%q) = %+v, %v", c.want, k, err)
		}
	}
}
