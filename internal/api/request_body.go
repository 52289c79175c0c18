package api

import "net/http"

// GuardServer wraps the server's whole handler (se.Server.Handler, built
// once the routes are) with what the /v1 layer needs before PocketBase's
// router: clean paths (uncleanPathGuard) and unread bodies (restoreRequestBody).
func GuardServer(next http.Handler) http.Handler {
	return restoreRequestBody(uncleanPathGuard(next))
}

// restoreRequestBody puts back the request body that net/http gave the
// handler. PocketBase's router replaces r.Body with its own wrapper, which
// hides from net/http that a body was left unread (a 413, a 401 before the
// body is read): the server then keeps the connection open and parses the
// rest of that body as the next request. With the original body back,
// net/http closes the connection instead.
func restoreRequestBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := r.Body
		defer func() { r.Body = body }()
		next.ServeHTTP(w, r)
	})
}
