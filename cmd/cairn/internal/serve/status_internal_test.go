package serve

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestEveryCodeHasAStatus reads the code constants of workbench/internal/core/errors.go
// and requires a status of its own for each: a code added there must be
// given one here.
func TestEveryCodeHasAStatus(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../../../workbench/internal/core/errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
				continue
			}
			if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, _ := strconv.Unquote(lit.Value)
				codes = append(codes, v)
			}
		}
		return true
	})
	if len(codes) < 25 {
		t.Fatalf("found only %d codes in workbench/internal/core/errors.go: %v", len(codes), codes)
	}
	codes = append(codes, CodeUnimplemented, CodeUnauthenticated, CodeUnknownAgent, CodeRouteNotFound,
		CodeMethodNotAllowed, CodeUnsupportedMedia, CodeIdempotencyKeyReused, CodeIdempotencyKeyInUse, CodeShuttingDown)
	for _, c := range codes {
		if !knownCode(c) {
			t.Errorf("code %s has no HTTP status", c)
			continue
		}
		st := Status(c, false)
		if st < 400 || st > 599 {
			t.Errorf("code %s: status %d is not an error", c, st)
		}
		if rs := Status(c, true); rs != st && rs != 503 {
			t.Errorf("code %s retryable: status %d", c, rs)
		}
	}
}
