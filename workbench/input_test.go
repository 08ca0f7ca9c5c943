package workbench

import (
	"encoding/json"
	"reflect"
	"testing"
)

// An input type that drifts from its schema must fail at registration,
// not decode arguments wrongly at call time.
func TestCheckInputTypeRefusesDrift(t *testing.T) {
	type missing struct {
		ID string `json:"id"`
	}
	type extra struct {
		createInput
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
			checkInputType(name, typ)
		}()
	}
	checkInputType("workbench_create", reflect.TypeFor[createInput]())
}

func TestJSONValueTellsNullFromAbsent(t *testing.T) {
	for raw, want := range map[string]jsonValue{
		`{}`:              {},
		`{"value":null}`:  {Set: true},
		`{"value":1.5}`:   {Set: true, V: json.Number("1.5")},
		`{"value":["a"]}`: {Set: true, V: []any{"a"}},
	} {
		var got predicateInput
		if err := decodeInput([]byte(raw), &got); err != nil {
			t.Fatalf("decodeInput(%s): %v", raw, err)
		}
		if !reflect.DeepEqual(got.Value, want) {
			t.Errorf("decodeInput(%s).Value = %#v, want %#v", raw, got.Value, want)
		}
	}
}
