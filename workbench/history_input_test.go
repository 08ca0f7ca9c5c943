package workbench

import (
	"fmt"
	"reflect"
	"testing"
)

// The typed inputs of the history tools have exactly the members of their
// tools' input schemas, as the internal inputs do (registerTool).
func TestHistoryInputTypesMatchTheirSchemas(t *testing.T) {
	for tool, typ := range map[string]reflect.Type{
		"workbench_commit":          reflect.TypeFor[CommitInput](),
		"workbench_snapshot":        reflect.TypeFor[SnapshotInput](),
		"workbench_snapshot_renew":  reflect.TypeFor[SnapshotRenewInput](),
		"workbench_snapshot_retire": reflect.TypeFor[SnapshotRetireInput](),
		"workbench_snapshot_list":   reflect.TypeFor[SnapshotListInput](),
		"workbench_restore":         reflect.TypeFor[RestoreInput](),
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Error(fmt.Sprint(r))
				}
			}()
			checkInputType(tool, typ)
		}()
	}
}
