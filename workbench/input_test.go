package workbench

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/files"
	"github.com/cairnstore/cairn/workbench/internal/query"
)

// An input type that drifts from its schema must fail at registration,
// not decode arguments wrongly at call time.
func TestCheckInputTypeRefusesDrift(t *testing.T) {
	type missing struct {
		ID string `json:"id"`
	}
	type extra struct {
		files.CreateArgs
		Other string `json:"other"`
	}
	for name, typ := range map[string]reflect.Type{
		"workbench_put_file": reflect.TypeFor[missing](),
		"workbench_create":   reflect.TypeFor[extra](),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("checkInputType(%s, %v) did not panic", name, typ)
				}
			}()
			core.CheckInputType(name, typ)
		}()
	}
	core.CheckInputType("workbench_create", reflect.TypeFor[files.CreateArgs]())
}

func TestJSONValueTellsNullFromAbsent(t *testing.T) {
	for raw, want := range map[string]core.JSONValue{
		`{}`:              {},
		`{"value":null}`:  {Set: true},
		`{"value":1.5}`:   {Set: true, V: json.Number("1.5")},
		`{"value":["a"]}`: {Set: true, V: []any{"a"}},
	} {
		var got query.PredicateInput
		if err := core.DecodeInput([]byte(raw), &got); err != nil {
			t.Fatalf("decodeInput(%s): %v", raw, err)
		}
		if !reflect.DeepEqual(got.Value, want) {
			t.Errorf("decodeInput(%s).Value = %#v, want %#v", raw, got.Value, want)
		}
	}
}
