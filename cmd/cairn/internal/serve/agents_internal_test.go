package serve

import (
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/head"
)

// TestAddCommitSumsEveryCounter: the served metrics add up every counter
// of each agent's CommitStats, the ones added later included.
func TestAddCommitSumsEveryCounter(t *testing.T) {
	var s head.CommitStats
	v := reflect.ValueOf(&s).Elem()
	n := int64(1)
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int64:
			f.SetInt(n)
			n++
		case reflect.Array:
			for j := range f.Len() {
				f.Index(j).SetInt(n)
				n++
			}
		default:
			t.Fatalf("CommitStats.%s is a %s: teach this test to fill it", v.Type().Field(i).Name, f.Kind())
		}
	}
	var dst head.CommitStats
	addCommit(&dst, s)
	addCommit(&dst, s)
	d := reflect.ValueOf(dst)
	for i := range v.NumField() {
		want, got := v.Field(i), d.Field(i)
		if want.Kind() == reflect.Array {
			for j := range want.Len() {
				if got.Index(j).Int() != 2*want.Index(j).Int() {
					t.Errorf("%s[%d] = %d, want %d", v.Type().Field(i).Name, j, got.Index(j).Int(), 2*want.Index(j).Int())
				}
			}
			continue
		}
		if got.Int() != 2*want.Int() {
			t.Errorf("%s = %d, want %d", v.Type().Field(i).Name, got.Int(), 2*want.Int())
		}
	}
}
