// grpc-gateway (v1, as Debian packages it) in front of the Echo API of tests/proxy: the
// reverse proxy its generator writes from echo.proto's google.api.http routes, for the
// benchmark to set beside `portico proxy`. Usage: echo-gateway -upstream HOST:PORT -port N.
// Prints "listening" once it accepts requests.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/grpc-ecosystem/grpc-gateway/runtime"
	"google.golang.org/grpc"

	pb "portico.test/echo/echopb"
)

func main() {
	upstream := flag.String("upstream", "", "the Echo gRPC server, HOST:PORT")
	port := flag.Int("port", 0, "the HTTP port to listen on (loopback)")
	flag.Parse()
	if *upstream == "" {
		fmt.Fprintln(os.Stderr, "echo-gateway: -upstream HOST:PORT is required")
		os.Exit(2)
	}
	mux := runtime.NewServeMux()
	// One connection to the upstream, dialled lazily, as the generated helper does it.
	err := pb.RegisterEchoHandlerFromEndpoint(
		context.Background(), mux, *upstream, []grpc.DialOption{grpc.WithInsecure()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo-gateway:", err)
		os.Exit(1)
	}
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo-gateway:", err)
		os.Exit(1)
	}
	fmt.Println("listening")
	if err := http.Serve(listener, mux); err != nil {
		fmt.Fprintln(os.Stderr, "echo-gateway:", err)
		os.Exit(1)
	}
}
