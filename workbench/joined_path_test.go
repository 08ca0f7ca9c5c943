package workbench_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// A path within the limits on its own but over them once its section is
// joined is refused by the reference's backend, which joins and checks
// it (facts.md 2: the stored section/path must itself satisfy the
// limits; 1.3: the backend's own validation is InvalidState, not
// retryable, details {source}), after the tool layer's argument checks:
// InvalidState {source} from every tool that takes a section and a path,
// before anything is read (a missing workbench too), while a second,
// tool-layer argument error in the same call is that InvalidArguments.
// grep adds the scope's presentation path, as to every error past its
// argument checks.
func TestJoinedPathOverTheLimitsIsInvalidState(t *testing.T) {
	s := newService(t)
	deep, long := strings.Repeat("x/", 63)+"x", strings.Repeat("a", 4089) // outputs/...: 65 components, 4097 bytes
	for _, rel := range []string{deep, long} {
		if _, err := workbench.NormalizePath(rel); err != nil {
			t.Fatalf("%.20q is not valid on its own: %v", rel, err)
		}
		p := `"section":"outputs","path":"` + rel + `"`
		for _, tc := range []struct {
			tool, args, otherError string
		}{
			{"workbench_put_file", `"text":"x"`, `"text":"x","base64":"eA=="`},
			{"workbench_append", `"text":"x"`, `"text":null`},
			{"workbench_edit", `"old_string":"a","new_string":"b"`, `"old_string":"","new_string":"b"`},
			{"workbench_stat", ``, `"at_snapshot":""`},
			{"workbench_list", ``, `"at_snapshot":""`},
			{"workbench_read", ``, `"at_snapshot":""`},
			{"workbench_grep", `"pattern":"x","recursive":true`, `"pattern":"x","recursive":true,"glob":"a/b"`},
			{"workbench_search", ``, `"fields":["path","path"]`},
			{"workbench_aggregate", `"measures":[{"name":"n","op":"count"}]`, `"measures":[{"name":"n","op":"count"},{"name":"n","op":"count"}]`},
			{"workbench_catalog", ``, ``},
		} {
			t.Run(tc.tool+fmt.Sprint(len(rel)), func(t *testing.T) {
				for _, id := range []string{"w", "nowhere"} {
					in := `{"id":"` + id + `",` + p
					if tc.args != "" {
						in += "," + tc.args
					}
					m, ok := call(t, s, tc.tool, in+"}")
					keys := []string{"source"}
					if tc.tool == "workbench_grep" {
						keys = append(keys, "path")
						if got, want := m["details"].(map[string]any)["path"], "/agents/test/wb/"+id+"/outputs/"+rel; got != want {
							t.Errorf("details.path %.60v, want %.60v", got, want)
						}
					}
					qErr(t, m, ok, "InvalidState", false, keys...)
					qMessage(t, m, "relative path")
					if tc.otherError != "" {
						m, ok = call(t, s, tc.tool, `{"id":"`+id+`",`+p+","+tc.otherError+"}")
						qErr(t, m, ok, "InvalidArguments", false)
					}
				}
			})
		}
	}
	if _, ok := call(t, s, "workbench_stat", `{"id":"nowhere"}`); ok {
		t.Fatal("a refused write created its workbench")
	}
}
