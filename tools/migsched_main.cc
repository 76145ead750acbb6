// The migsched command-line tool: a thin driver over the core (see src/cli/).
#include "cli/main.h"

int main(int argc, char** argv) { return migsched::cli::Main(argc, argv); }
