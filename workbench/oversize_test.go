package workbench_test

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/payload"
)

// TestOversizedTextAnswersAsTheWholeParse: a put_file or append whose
// text payload decodes past MaxBytes is answered without parsing that
// text, and the answer is, byte for byte, the one the whole parse gives:
// for valid inputs, for inputs with another fault that comes first or
// later, and for inputs the shortcut must leave alone (escaped keys, text
// twice, strings the parser refuses).
func TestOversizedTextAnswersAsTheWholeParse(t *testing.T) {
	const maxBytes = 64
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{MaxBytes: maxBytes})
	ctx := context.Background()
	if out, ok := s.Call(ctx, "workbench_create", []byte(`{"id":"w"}`)); !ok {
		t.Fatalf("create: %s", out)
	}
	big := strings.Repeat("z", 200)
	escaped := strings.Repeat(`\u00e9`, 40) + strings.Repeat(`\ud83d\ude00`, 10) + `\n\"\\\/`
	cases := []struct {
		name, tool, in string
		shortcut       bool // whether the shortcut must settle it
	}{
		{"valid", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","text":"` + big + `"}`, true},
		{"append", "workbench_append", `{"id":"w","section":"logs","path":"l.txt","text":"` + big + `"}`, true},
		{"escapes", "workbench_put_file", `{"text":"` + escaped + `","id":"w","section":"outputs","path":"a.txt"}`, true},
		{"whitespace", "workbench_put_file", " {\n\"id\" : \"w\" ,\t\"section\":\"outputs\", \"path\":\"a.txt\",\"text\" :\"" + big + "\" }\n", true},
		{"bad content type after", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","content_type":"","text":"` + big + `"}`, true},
		{"missing workbench", "workbench_put_file", `{"id":"nope","section":"outputs","path":"a.txt","text":"` + big + `"}`, true},
		{"base64 too", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","base64":"eA==","text":"` + big + `"}`, true},
		{"bad id", "workbench_put_file", `{"id":"bad id!","section":"outputs","path":"a.txt","text":"` + big + `"}`, true},
		{"bad path", "workbench_put_file", `{"id":"w","section":"outputs","path":"../x","text":"` + big + `"}`, true},
		{"bad section", "workbench_put_file", `{"id":"w","section":"nowhere","path":"a.txt","text":"` + big + `"}`, true},
		{"unknown member", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","extra":[1,{"text":"x"}],"text":"` + big + `"}`, true},
		{"number member", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","replace":1,"text":"` + big + `"}`, true},
		{"trailing garbage", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","text":"` + big + `"} x`, true},
		{"missing colon before", "workbench_put_file", `{"id" "w","section":"outputs","path":"a.txt","text":"` + big + `"}`, false},
		{"not an object", "workbench_put_file", `["text","` + big + `"]`, false},
		{"escaped key", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","t\u0065xt":"` + big + `"}`, false},
		{"text twice", "workbench_put_file", `{"id":"w","section":"nowhere","path":"a.txt","text":"` + big + `","text":"small"}`, false},
		{"text not a string", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","text":["` + big + `"]}`, false},
		{"invalid escape", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","text":"` + big + `\x"}`, false},
		{"lone surrogate", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","text":"` + big + `\ud800"}`, false},
		{"surrogate then other", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","text":"` + big + `\ud800\u0041"}`, false},
		{"control byte", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","text":"` + big + "\x01" + `"}`, false},
		{"bad utf-8", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","text":"` + big + "\xff" + `"}`, false},
		{"unterminated", "workbench_put_file", `{"id":"w","section":"outputs","path":"a.txt","text":"` + big, false},
		{"at the limit", "workbench_put_file", `{"id":"w","section":"nowhere","path":"b.txt","text":"` + big[:maxBytes] + `","content_type":"text/plain"}`, false},
	}
	for _, c := range cases {
		before := payload.ShortcutsTaken()
		fast, fastOK := s.Call(ctx, c.tool, []byte(c.in))
		took := payload.ShortcutsTaken() != before
		restore := payload.SetShortcut(false)
		whole, wholeOK := s.Call(ctx, c.tool, []byte(c.in))
		restore()
		if string(fast) != string(whole) || fastOK != wholeOK {
			t.Errorf("%s: with the shortcut %s, parsed whole %s", c.name, fast, whole)
		}
		if took != c.shortcut {
			t.Errorf("%s: shortcut taken %v, want %v (%s)", c.name, took, c.shortcut, fast)
		}
	}
	out, _ := s.Call(ctx, "workbench_put_file", []byte(cases[0].in))
	if !strings.Contains(string(out), `"code":"PayloadTooLarge"`) || !strings.Contains(string(out), `"actual_bytes":200`) {
		t.Fatalf("an oversized payload: %s", out)
	}
	out, _ = s.Call(ctx, "workbench_put_file", []byte(cases[2].in))
	if !strings.Contains(string(out), `"actual_bytes":124`) { // 40×2 + 10×4 + 4
		t.Fatalf("an oversized escaped payload: %s", out)
	}
}

// TestOversizedTextIsNotCopied: an input of 5 MiB whose text passes a
// limit of 1 MiB (and whose whole is within the input limit, 6 MiB) is refused having allocated far less than the input,
// where the whole parse allocates it three times over.
func TestOversizedTextIsNotCopied(t *testing.T) {
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{MaxBytes: 1 << 20})
	ctx := context.Background()
	in := []byte(`{"id":"w","section":"outputs","path":"a.txt","text":"` + strings.Repeat("z", 5<<20) + `"}`)
	allocated := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.TotalAlloc
	}
	for _, shortcut := range []bool{true, false} {
		restore := payload.SetShortcut(shortcut)
		before := allocated()
		out, _ := s.Call(ctx, "workbench_put_file", in)
		used := allocated() - before
		restore()
		if !strings.Contains(string(out), `"code":"PayloadTooLarge"`) {
			t.Fatalf("shortcut %v: %s", shortcut, out)
		}
		t.Logf("shortcut %v: %d KiB allocated for an input of %d KiB", shortcut, used>>10, len(in)>>10)
		if shortcut && used > uint64(len(in))/4 {
			t.Errorf("with the shortcut, %d bytes allocated for an input of %d", used, len(in))
		}
		if !shortcut && used < uint64(len(in))*2 {
			t.Errorf("the whole parse allocated %d bytes for an input of %d: the comparison measures nothing", used, len(in))
		}
	}
}

// chunks is a reader that gives its bytes n at a time.
type chunks struct {
	b []byte
	n int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}

// TestReadPayloadInputAnswersAsTheWholeInput: a put_file or append input
// read by ReadPayloadInput, in pieces of any size, then called under
// WithOversizedText, answers byte for byte what the whole input answers
// parsed whole; and an oversized text is not kept.
func TestReadPayloadInputAnswersAsTheWholeInput(t *testing.T) {
	const maxBytes = 64
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{MaxBytes: maxBytes})
	ctx := context.Background()
	if out, ok := s.Call(ctx, "workbench_create", []byte(`{"id":"w"}`)); !ok {
		t.Fatalf("create: %s", out)
	}
	big := strings.Repeat("z", 100) + "é€😀" + `\u00e9\ud83d\ude00\n` + strings.Repeat("y", 20)
	small := "hello é"
	put := func(members string) string {
		return `{"id":"w","section":"outputs","path":"p.txt","replace":true,` + members + `}`
	}
	inputs := []string{
		`{"id":"w","section":"outputs","path":"a.txt","text":"` + big + `"}`,
		`{"text":"` + big + `","id":"w","section":"outputs","path":"a.txt","content_type":""}`,
		put(`"text":"` + big + `"`),
		put(`"text":"` + big + `","text":"` + small + `"`),
		put(`"text":"` + small + `","text":"` + big + `"`),
		put(`"text":"` + big + `","t\u0065xt":"` + small + `"`),
		put(`"t\u0065xt":"` + big + `"`),
		put(`"text":"` + big + `","text":5`),
		put(`"text":"` + big + `","text":"` + big + `"`),
		put(`"x":{"text":"` + big + `"},"text":"` + small + `"`),
		put(`"text":"` + big + `\x"`),
		put(`"text":"` + big + `\ud800"`),
		put(`"text":"` + big + `\ud83d\u0041"`),
		put(`"text":"` + big + "\x01" + `"`),
		put(`"text":"` + big + "\xe0\x80\x80" + `"`),
		put(`"text":"` + big + "\xed\xa0\x80" + `"`),
		put(`"text":"` + big + "\xf4\x90\x80\x80" + `"`),
		put(`"text":"` + big + "\xc3" + `"`),
		put(`"text":"` + big),
		put(`"text":"`+big+`"`) + " x",
		`{"id":"w","section":"outputs","path":"a.txt","text":"` + big[:40] + `\x"}`,
		`["text","` + big + `"]`,
		`{"id":"w","section":"outputs","path":"e.txt","replace":true,"text":"` + small + `"}`,
		`{"id":"w","section":"outputs","path":"b.txt","replace":true,"text":"` + strings.Repeat(`\u0001`, maxBytes) + `"}`,
	}
	for _, in := range inputs {
		restore := payload.SetShortcut(false)
		whole, wholeOK := s.Call(ctx, "workbench_put_file", []byte(in))
		restore()
		for _, n := range []int{1, 2, 3, 5, 7, 13, 64, len(in)} {
			reduced, oversize, err := workbench.ReadPayloadInput(&chunks{[]byte(in), n}, maxBytes, len(in))
			if err != nil {
				t.Fatal(err)
			}
			if oversize > 0 && strings.Contains(string(reduced), "zzzz") {
				t.Errorf("%.60q in pieces of %d: the oversized text was kept", in, n)
			}
			got, gotOK := s.Call(workbench.WithOversizedText(ctx, oversize), "workbench_put_file", reduced)
			if gotOK != wholeOK || (string(got) != string(whole) && !(gotOK && sameSuccess(got, whole))) {
				t.Errorf("%q in pieces of %d: read %s, whole %s", in[len(in)-min(len(in), 60):], n, got, whole)
			}
		}
	}
}

// sameSuccess compares two successful put answers but for the
// generation, which each put of a replace:true input moves on.
func sameSuccess(a, b []byte) bool {
	strip := func(s []byte) string {
		out := string(s)
		if i := strings.Index(out, `"generation":`); i >= 0 {
			j := strings.IndexByte(out[i:], ',')
			out = out[:i] + out[i+j:]
		}
		return out
	}
	return strip(a) == strip(b)
}
