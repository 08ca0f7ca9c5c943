package core_test

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/core"
)

func TestParseWorkbenchID(t *testing.T) {
	long := strings.Repeat("a", 128)
	tests := []struct {
		id, err string
	}{
		{"wb-main", ""},
		{"0", ""},
		{"A_b-9", ""},
		{long, ""},
		{"Run_42-x", ""},
		{"", "workbench id is empty"},
		{long + "b", "workbench id is 129 bytes, maximum is 128"},
		{"_a", "workbench id must start with an ASCII letter or digit, found byte 0x5f"},
		{"-a", "workbench id must start with an ASCII letter or digit, found byte 0x2d"},
		{"éa", "workbench id must start with an ASCII letter or digit, found byte 0xc3"},
		{"abc.d", "workbench id contains invalid byte 0x2e at offset 3"},
		{"a/b", "workbench id contains invalid byte 0x2f at offset 1"},
		{"a b", "workbench id contains invalid byte 0x20 at offset 1"},
		{"ab\x00", "workbench id contains invalid byte 0x00 at offset 2"},
		{"aé", "workbench id contains invalid byte 0xc3 at offset 1"},
	}
	for _, tt := range tests {
		got, err := core.ParseWorkbenchID(tt.id)
		if tt.err == "" {
			if err != nil || got != tt.id {
				t.Errorf("ParseWorkbenchID(%q) = %q, %v", tt.id, got, err)
			}
			continue
		}
		if err == nil || err.Code != core.CodeInvalidArguments || err.Message != tt.err || len(err.Details) != 0 {
			t.Errorf("ParseWorkbenchID(%q) error %+v, want InvalidArguments %q", tt.id, err, tt.err)
		}
		if got != "" {
			t.Errorf("ParseWorkbenchID(%q) returned %q beside an error", tt.id, got)
		}
	}
}

func components(n int, c string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = c
	}
	return strings.Join(parts, "/")
}

func TestNormalizePath(t *testing.T) {
	accepted := []string{
		"a",
		"a.txt",
		"a/b/c.json",
		".a",
		"a.",
		"...",
		"a..b",
		" ",
		"a b/ c",
		"é/😀",
		"A/a",
		"outputs/outputs",
		"-",
		"a\x01b",
		components(64, "x"),
		strings.Repeat("a", 4096),
		strings.Repeat("ab/", 63) + strings.Repeat("c", 4096-3*63),
	}
	for _, p := range accepted {
		got, err := core.NormalizePath(p)
		if err != nil {
			t.Errorf("NormalizePath(%.60q) = %v", p, err)
			continue
		}
		if want := strings.Split(p, "/"); !slices.Equal(got, want) {
			t.Errorf("NormalizePath(%.60q) = %q, want %q", p, got, want)
		}
	}
	rejected := []struct{ p, err string }{
		{"", "relative path is empty"},
		{"/", "relative path must not start with '/'"},
		{"/a", "relative path must not start with '/'"},
		{"//a", "relative path must not start with '/'"},
		{strings.Repeat("a", 4097), "relative path is 4097 bytes, maximum is 4096"},
		{"/" + strings.Repeat("a", 5000), "relative path must not start with '/'"},
		{"a/\xff", "relative path is not valid UTF-8"},
		{"a/", "relative path component 1 is empty"},
		{"a//b", "relative path component 1 is empty"},
		{"a/b/", "relative path component 2 is empty"},
		{".", "relative path component 0 is '.'"},
		{"..", "relative path component 0 is '..'"},
		{"a/./b", "relative path component 1 is '.'"},
		{"a/../b", "relative path component 1 is '..'"},
		{"./..", "relative path component 0 is '.'"},
		{"a\\b", "relative path component 0 contains backslash"},
		{"a/b\\", "relative path component 1 contains backslash"},
		{"a/b\x00c", "relative path component 1 contains NUL"},
		{"a\\\x00", "relative path component 0 contains backslash"},
		{components(65, "x"), "relative path has 65 components, maximum is 64"},
		{components(200, "x"), "relative path has 65 components, maximum is 64"},
		// Components are checked in order: a bad one before the 65th wins.
		{components(3, "x") + "/./" + components(70, "x"), "relative path component 3 is '.'"},
		{components(64, "x") + "/..", "relative path has 65 components, maximum is 64"},
		{components(65, "x") + "/", "relative path has 65 components, maximum is 64"},
		{components(63, "x") + "/", "relative path component 63 is empty"},
	}
	for _, tt := range rejected {
		got, err := core.NormalizePath(tt.p)
		if err == nil || err.Code != core.CodeInvalidArguments || err.Message != tt.err || err.Retryable || len(err.Details) != 0 {
			t.Errorf("NormalizePath(%.60q) = %q, %+v, want InvalidArguments %q", tt.p, got, err, tt.err)
		}
		if got != nil {
			t.Errorf("NormalizePath(%.60q) returned components beside an error", tt.p)
		}
	}
}

func TestJoinSection(t *testing.T) {
	tests := []struct {
		section, rel string
		want         []string
		err          string
	}{
		{"outputs", "a.txt", []string{"outputs", "a.txt"}, ""},
		{"metadata", "run_manifest.json", []string{"metadata", "run_manifest.json"}, ""},
		{"outputs", "logs/x", []string{"outputs", "logs", "x"}, ""},
		{"input", "inputs/x", []string{"input", "inputs", "x"}, ""},
		{"outputs", "Outputs/x", []string{"outputs", "Outputs", "x"}, ""},
		{"outputs", components(63, "x"), append([]string{"outputs"}, strings.Split(components(63, "x"), "/")...), ""},
		{"logs", strings.Repeat("a", 4091), []string{"logs", strings.Repeat("a", 4091)}, ""},
		{"outputs", "outputs", nil, "path is relative to section outputs; remove the duplicated section prefix"},
		{"outputs", "outputs/a.txt", nil, "path is relative to section outputs; remove the duplicated section prefix"},
		// Valid on its own, over the limits once joined: the storage
		// side's refusal (TestJoinedPathOverTheLimitsIsInvalidState).
		{"outputs", components(64, "x"), nil, "InvalidState: relative path has 65 components, maximum is 64"},
		{"logs", strings.Repeat("a", 4092), nil, "InvalidState: relative path is 4097 bytes, maximum is 4096"},
		{"output", "a", nil, "unknown Workbench section output"},
		{"", "a", nil, "unknown Workbench section "},
		{"outputs", "", nil, "relative path is empty"},
		{"outputs", "/a", nil, "relative path must not start with '/'"},
		{"outputs", "a/../b", nil, "relative path component 1 is '..'"},
	}
	for _, tt := range tests {
		got, err := core.JoinSection(tt.section, tt.rel)
		if tt.err == "" {
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("JoinSection(%q, %.40q) = %q, %v", tt.section, tt.rel, got, err)
			}
			continue
		}
		code, msg := core.CodeInvalidArguments, tt.err
		if m, ok := strings.CutPrefix(tt.err, "InvalidState: "); ok {
			code, msg = core.CodeInvalidState, m
		}
		if err == nil || err.Code != code || err.Message != msg {
			t.Errorf("JoinSection(%q, %.40q) = %q, %v, want %s %q", tt.section, tt.rel, got, err, code, msg)
		}
	}
}

func TestWritePathRefusesTheReservedProjections(t *testing.T) {
	for _, rel := range []string{"run_manifest.json", "restore_manifest.json"} {
		_, err := core.WritePath("metadata", rel)
		want := "metadata/" + rel + " is a reserved Workbench projection and cannot be changed by generic artifact tools"
		if err == nil || err.Code != core.CodeInvalidArguments || err.Message != want {
			t.Errorf("WritePath(metadata, %s) = %v, want %q", rel, err, want)
		}
		if !core.IsReserved([]string{"metadata", rel}) {
			t.Errorf("IsReserved(metadata/%s) = false", rel)
		}
	}
	for _, p := range [][2]string{
		{"metadata", "run_manifest.json/x"},
		{"metadata", "x/run_manifest.json"},
		{"metadata", "Run_manifest.json"},
		{"outputs", "run_manifest.json"},
		{"metadata", "checkpoints.jsonl"},
	} {
		c, err := core.WritePath(p[0], p[1])
		if err != nil {
			t.Errorf("WritePath(%s, %s) = %v", p[0], p[1], err)
		}
		if core.IsReserved(c) || core.CheckWritable(c) != nil {
			t.Errorf("%q reported reserved", c)
		}
	}
	if _, err := core.WritePath("metadata", "metadata/run_manifest.json"); err == nil || !strings.Contains(err.Message, "duplicated section prefix") {
		t.Errorf("duplicated prefix not refused first: %v", err)
	}
	if got, want := core.RunManifestPath, "metadata/run_manifest.json"; got != want {
		t.Errorf("RunManifestPath = %q", got)
	}
	if got, want := core.RestoreManifestPath, "metadata/restore_manifest.json"; got != want {
		t.Errorf("RestoreManifestPath = %q", got)
	}
}

func TestScopePath(t *testing.T) {
	tests := []struct {
		section, rel string
		want         []string
		err          string
	}{
		{"", "", []string{}, ""},
		{"outputs", "", []string{"outputs"}, ""},
		{"", "outputs/a", []string{"outputs", "a"}, ""},
		{"", "extra/top", []string{"extra", "top"}, ""},
		{"logs", "a/b", []string{"logs", "a", "b"}, ""},
		{"logs", "logs/b", nil, "path is relative to section logs; remove the duplicated section prefix"},
		{"other", "", nil, "unknown Workbench section other"},
		{"", "a//b", nil, "relative path component 1 is empty"},
	}
	for _, tt := range tests {
		got, err := core.ScopePath(tt.section, tt.rel)
		if tt.err == "" {
			if err != nil || got == nil || !slices.Equal(got, tt.want) {
				t.Errorf("ScopePath(%q, %q) = %q, %v, want %q", tt.section, tt.rel, got, err, tt.want)
			}
			continue
		}
		if err == nil || err.Message != tt.err {
			t.Errorf("ScopePath(%q, %q) = %v, want %q", tt.section, tt.rel, err, tt.err)
		}
	}
}

func TestSections(t *testing.T) {
	want := []string{"input", "scripts", "outputs", "logs", "metadata"}
	if got := core.Sections(); !slices.Equal(got, want) {
		t.Fatalf("Sections() = %v", got)
	}
	for _, s := range want {
		if !core.IsSection(s) {
			t.Errorf("IsSection(%q) = false", s)
		}
	}
	for _, s := range []string{"", "Input", "output", "metadata/", "checkpoints"} {
		if core.IsSection(s) {
			t.Errorf("IsSection(%q) = true", s)
		}
	}
	for _, tt := range []struct {
		in      []string
		section string
		rel     []string
	}{
		{[]string{"outputs", "a", "b"}, "outputs", []string{"a", "b"}},
		{[]string{"outputs"}, "outputs", []string{}},
		{[]string{"extra", "a"}, "", []string{"extra", "a"}},
		{nil, "", nil},
	} {
		s, rel := core.SplitSection(tt.in)
		if s != tt.section || !slices.Equal(rel, tt.rel) {
			t.Errorf("SplitSection(%q) = %q, %q", tt.in, s, rel)
		}
	}
}

func TestNormalizeLogicalRoot(t *testing.T) {
	tests := []struct{ raw, want, err string }{
		{"/agents/test/wb", "/agents/test/wb", ""},
		{"/agents//test/wb/", "/agents/test/wb", ""},
		{"//agents/test/wb//", "/agents/test/wb", ""},
		{"/x", "/x", ""},
		{"/" + components(64, "c"), "/" + components(64, "c"), ""},
		{"/" + strings.Repeat("a", 4095), "/" + strings.Repeat("a", 4095), ""},
		{"/" + strings.Repeat("a", 4095) + "//", "/" + strings.Repeat("a", 4095), ""},
		{"agents/test/wb", "", "logical Workbench root must be absolute"},
		{"", "", "logical Workbench root must be absolute"},
		{"/", "", "logical Workbench root must not be /"},
		{"///", "", "logical Workbench root must not be /"},
		{"/a/./b", "", "logical Workbench root must not contain '.' or '..' components"},
		{"/a/..", "", "logical Workbench root must not contain '.' or '..' components"},
		{"/a\\b", "", "logical Workbench root must not contain backslashes or NUL"},
		{"/a\x00", "", "logical Workbench root must not contain backslashes or NUL"},
		{"/a\xff", "", "logical Workbench root must be valid UTF-8"},
		{"/" + components(65, "c"), "", "logical Workbench root must not exceed 64 components"},
		{"/" + strings.Repeat("a", 4096), "", "logical Workbench root must not exceed 4096 bytes"},
	}
	for _, tt := range tests {
		got, err := core.NormalizeLogicalRoot(tt.raw)
		if tt.err == "" {
			if err != nil || got != tt.want {
				t.Errorf("NormalizeLogicalRoot(%.40q) = %.40q, %v, want %.40q", tt.raw, got, err, tt.want)
			}
			continue
		}
		if err == nil || err.Code != core.CodeInvalidArguments || err.Message != tt.err {
			t.Errorf("NormalizeLogicalRoot(%.40q) = %v, want %q", tt.raw, err, tt.err)
		}
	}
	if got, err := core.AgentRoot("test"); err != nil || got != "/agents/test/wb" {
		t.Errorf("AgentRoot(test) = %q, %v", got, err)
	}
	for _, bad := range []string{"", "a/b", "..", "a\\b"} {
		if _, err := core.AgentRoot(bad); err == nil {
			t.Errorf("AgentRoot(%q) accepted", bad)
		}
	}
}

func TestPresentationPaths(t *testing.T) {
	root := "/agents/test/wb"
	if got := core.WorkbenchPath(root, "wb-main"); got != "/agents/test/wb/wb-main" {
		t.Errorf("WorkbenchPath = %q", got)
	}
	for _, tt := range []struct {
		c    []string
		want string
	}{
		{nil, "/agents/test/wb/wb-main"},
		{[]string{"outputs"}, "/agents/test/wb/wb-main/outputs"},
		{[]string{"outputs", "report.txt"}, "/agents/test/wb/wb-main/outputs/report.txt"},
		{[]string{"metadata", "run_manifest.json"}, "/agents/test/wb/wb-main/metadata/run_manifest.json"},
	} {
		if got := core.PresentationPath(root, "wb-main", tt.c); got != tt.want {
			t.Errorf("PresentationPath(%q) = %q, want %q", tt.c, got, tt.want)
		}
	}
	if got := core.LogicalPath([]string{"outputs", "a.txt"}); got != "outputs/a.txt" {
		t.Errorf("LogicalPath = %q", got)
	}
	if got := core.LogicalPath(nil); got != "" {
		t.Errorf("LogicalPath(nil) = %q", got)
	}
}

// encodedOrder is the order of the paths' exact-row keys.
func encodedOrder(t testing.TB, a, b []string) int {
	ea, err := shards.EncodePath(a)
	if err != nil {
		t.Fatalf("EncodePath(%q): %v", a, err)
	}
	eb, err := shards.EncodePath(b)
	if err != nil {
		t.Fatalf("EncodePath(%q): %v", b, err)
	}
	return bytes.Compare(ea, eb)
}

func TestComparePathsExamples(t *testing.T) {
	p := func(s string) []string { return strings.Split(s, "/") }
	ordered := []string{
		"a/x", // a's subtree first,
		"a",   // then a itself,
		"a-b/x",
		"a.txt",
		"ab",
		"b/c/d",
		"b/c",
		"b/c0",
		"b",
		"é",
	}
	for i := range ordered {
		for j := range ordered {
			got := core.ComparePaths(p(ordered[i]), p(ordered[j]))
			if want := cmp.Compare(i, j); got != want {
				t.Errorf("ComparePaths(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
			if enc := encodedOrder(t, p(ordered[i]), p(ordered[j])); enc != got {
				t.Errorf("ComparePaths(%s, %s) = %d, key order %d", ordered[i], ordered[j], got, enc)
			}
		}
	}
	// As text, "a-b/x" sorts before "a/x" ('-' < '/'); by component it
	// sorts after.
	if strings.Compare("a-b/x", "a/x") >= 0 || core.ComparePaths(p("a-b/x"), p("a/x")) <= 0 {
		t.Error("component order is text order")
	}
	// The root (no components) is every path's ancestor.
	if core.ComparePaths(nil, p("a")) != 1 || core.ComparePaths(p("a"), nil) != -1 || core.ComparePaths(nil, nil) != 0 {
		t.Error("root order")
	}
}

// randomPath draws a path from an alphabet dense in the bytes where the
// orders could disagree: below and around '/', multi-byte UTF-8, and names
// that are prefixes of one another.
func randomPath(r *rand.Rand) []string {
	pieces := []string{"a", "b", "-", ".", "\x01", "\x2e", "\x30", "~", "\x7f", "é", "😀", "ab", "a-", "A"}
	n := 1 + r.IntN(4)
	out := make([]string, n)
	for i := range out {
		var sb strings.Builder
		for range 1 + r.IntN(3) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		out[i] = sb.String()
	}
	return out
}

func TestComparePathsAgreesWithEncodePath(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 50000 {
		a, b := randomPath(r), randomPath(r)
		if r.IntN(4) == 0 { // share a prefix often
			b = append(slices.Clone(a[:r.IntN(len(a))+1]), b[:r.IntN(len(b)+1)]...)
		}
		got := core.ComparePaths(a, b)
		if want := encodedOrder(t, a, b); got != want {
			t.Fatalf("ComparePaths(%q, %q) = %d, key order %d", a, b, got, want)
		}
		if core.ComparePaths(b, a) != -got {
			t.Fatalf("ComparePaths(%q, %q) is not antisymmetric", a, b)
		}
	}
	// Sorting by ComparePaths and by key gives one order.
	paths := make([][]string, 500)
	for i := range paths {
		paths[i] = randomPath(r)
	}
	byCompare := slices.Clone(paths)
	slices.SortStableFunc(byCompare, core.ComparePaths)
	byKey := slices.Clone(paths)
	slices.SortStableFunc(byKey, func(a, b []string) int { return encodedOrder(t, a, b) })
	for i := range byCompare {
		if !slices.Equal(byCompare[i], byKey[i]) {
			t.Fatalf("sorted orders differ at %d: %q vs %q", i, byCompare[i], byKey[i])
		}
	}
}

// validRelative is an independent statement of the normalizer's rules.
func validRelative(p string) bool {
	if p == "" || p[0] == '/' || len(p) > core.MaxPathBytes || !utf8.ValidString(p) {
		return false
	}
	parts := strings.Split(p, "/")
	if len(parts) > core.MaxPathComponents {
		return false
	}
	for _, c := range parts {
		if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "\\\x00") {
			return false
		}
	}
	return true
}

func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{
		"a", "a/b", "a-b/x", "a/x", "", "/", "a//b", "a/", ".", "..", "a/./b", "a\\b", "a\x00",
		"é/😀", "\xff", "outputs/a.txt", "metadata/run_manifest.json", components(64, "x"), components(65, "y"),
		strings.Repeat("z", 4096),
	} {
		f.Add(s, "a/x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, ea := core.NormalizePath(a)
		if (ea == nil) != validRelative(a) {
			t.Fatalf("NormalizePath(%q) error %v, rules say valid=%v", a, ea, validRelative(a))
		}
		if ea != nil {
			if ca != nil || ea.Code != core.CodeInvalidArguments || ea.Retryable || len(ea.Details) != 0 {
				t.Fatalf("NormalizePath(%q) = %q, %+v", a, ca, ea)
			}
			return
		}
		if got := strings.Join(ca, "/"); got != a {
			t.Fatalf("NormalizePath(%q) components %q rejoin to %q", a, ca, got)
		}
		key, err := shards.EncodePath(ca)
		if err != nil {
			t.Fatalf("EncodePath(%q): %v", ca, err)
		}
		back, err := shards.DecodePath(key)
		if err != nil || !slices.Equal(back, ca) {
			t.Fatalf("DecodePath(EncodePath(%q)) = %q, %v", ca, back, err)
		}

		// Under a section: the section becomes the first component.
		for _, s := range core.Sections() {
			j, err := core.JoinSection(s, a)
			ok := ca[0] != s && len(ca) < core.MaxPathComponents && len(s)+1+len(a) <= core.MaxPathBytes
			if (err == nil) != ok {
				t.Fatalf("JoinSection(%s, %q) error %v, want ok=%v", s, a, err, ok)
			}
			if err == nil && (j[0] != s || !slices.Equal(j[1:], ca)) {
				t.Fatalf("JoinSection(%s, %q) = %q", s, a, j)
			}
		}

		cb, eb := core.NormalizePath(b)
		if eb != nil {
			return
		}
		keyB, err := shards.EncodePath(cb)
		if err != nil {
			t.Fatalf("EncodePath(%q): %v", cb, err)
		}
		got := core.ComparePaths(ca, cb)
		if want := bytes.Compare(key, keyB); got != want {
			t.Fatalf("ComparePaths(%q, %q) = %d, key order %d", ca, cb, got, want)
		}
		if (got == 0) != (a == b) {
			t.Fatalf("ComparePaths(%q, %q) = %d", a, b, got)
		}
	})
}
