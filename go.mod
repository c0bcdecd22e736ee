module github.com/eaglet-dev/eaglet

go 1.27.3

require (
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
