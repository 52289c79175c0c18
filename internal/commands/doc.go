// Package commands is petstore's command line for the packages it drives:
// `keys` (internal/apikeys), `categories` (internal/categories),
// `customers` (internal/customers) and `secrets` (internal/atrest). It keeps
// cobra out of those packages, which serve the HTTP layers too.
package commands
