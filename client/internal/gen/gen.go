// Package gen is the code oapi-codegen generates from openapi/openapi.yaml:
// the models and request builders package client is written on. It is
// internal so that the generator's names and shapes never become the client's
// API; package client maps them to its own.
//
// Regenerate after changing the document (CI's `go run ./tools/gencheck`
// fails when api.gen.go is not what the document generates):
//
//	go generate ./client/...
package gen

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../../openapi/openapi.yaml
