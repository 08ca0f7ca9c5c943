package head

import "github.com/cairnstore/cairn/shards/shardstest"

// testSchema is what the engine's tests open shards with: the families of
// package shardstest under a test marker.
var testSchema = Schema{
	Marker:   Marker{SchemaID: "test_workspace", FormatVersion: 8, ValueFormatVersion: 1},
	Families: shardstest.Schema(),
}

// SchemaForTest is testSchema, for the black-box tests.
var SchemaForTest = testSchema

// carrierSchema is testSchema with heads of HeadFormat, which say
// whether their writer carries (CarrierFrom); CarrierSchemaForTest is it
// for the black-box tests.
var carrierSchema = func() Schema {
	sc := testSchema
	sc.CarrierFrom = sc.Marker.ValueFormatVersion
	return sc
}()

var CarrierSchemaForTest = carrierSchema
