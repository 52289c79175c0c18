// Package commands is petstore's command line for the packages it drives:
// `keys` (internal/apikeys) and `categories` (internal/categories). It keeps
// cobra out of those packages, which serve the HTTP layers too.
package commands
