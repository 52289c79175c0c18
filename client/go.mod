module petstore/client

go 1.24
