// Package openapi holds the OpenAPI 3.1 document of the API under /api/v1,
// embedded in the binary so the document served is the one the binary was
// tested against. Tests beside the router keep it and the routes in step;
// the e2e suites validate every answer against it.
package openapi

import _ "embed"

// Document is the OpenAPI document, JSON. Callers must not modify it.
//
//go:embed openapi.json
var Document []byte
