package openapi_test

import (
	"context"
	"testing"

	"github.com/aigateway/gateway/gateway/openapi"
	"github.com/getkin/kin-openapi/openapi3"
)

// The document loads and passes kin-openapi's validation of OpenAPI 3.1:
// references resolve, schemas are well formed, examples and defaults match
// their schemas, every path parameter is declared.
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Document)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() || doc.IsOpenAPI32OrLater() {
		t.Fatalf("openapi = %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableSchemaDefaultsValidation(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			if op.Responses.Len() == 0 {
				t.Errorf("%s %s documents no response", method, path)
			}
		}
	}
}
