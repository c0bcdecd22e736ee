package endpoint

// The APIs an endpoint can use: each registers itself (name, options,
// constructor) in its init. A new API is one package plus one line here.
import (
	_ "github.com/eaglet-dev/eaglet/stages/serving/backend/openai"
	_ "github.com/eaglet-dev/eaglet/stages/serving/backend/sglang"
	_ "github.com/eaglet-dev/eaglet/stages/serving/backend/simapi"
)
