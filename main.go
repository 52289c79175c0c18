// Command petstore is the animal store service: PocketBase plus the /v1 pets API.
package main

import (
	"log"
	"os"

	"github.com/pocketbase/pocketbase"

	"petstore/apikeys"
	"petstore/hooks"
	_ "petstore/migrations"
	"petstore/pb_public"
)

func main() {
	// Not pocketbase.New(): under `go run` it turns on dev mode, which prints
	// SQL on stdout, where `keys create` prints the new key.
	app := pocketbase.NewWithConfig(pocketbase.Config{})

	hooks.Register(app, pbpublic.FS)
	keys := apikeys.NewCommand(app)
	app.RootCmd.AddCommand(keys.Command)

	if err := app.Start(); err != nil {
		log.Fatal(err)
	}
	if keys.Err() != nil {
		os.Exit(1)
	}
}
