// Package commands is petstore's command line for the packages it drives:
// `keys` (internal/apikeys), `categories` (internal/categories) and
// `customers` (internal/customers). It keeps
// cobra out of those packages, which serve the HTTP layers too.
package commands
