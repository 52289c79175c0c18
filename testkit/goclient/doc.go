// Package goclient tests the Go client (module petstore/client, in
// client/) against the real service: the in-process app (testkit/apptest)
// and the built binary (testkit/realserver). They live in the server's
// module so that the client's module needs nothing but the standard
// library; the client's own tests (in client/) run it against servers that
// misbehave.
package goclient
