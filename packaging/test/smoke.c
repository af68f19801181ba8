// The program packaging/test-deb.sh debugs through the installed package's
// `strobe mcp`: every 100 ms it calls smoke_add (the traced function) and
// prints the sum, for at most a minute, then exits 0.
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) int smoke_add(int a, int b) { return a + b; }

int main(void) {
    int total = 0;
    for (int i = 0; i < 600; i++) {
        total = smoke_add(total, i);
        printf("smoke %d: %d\n", i, total);
        fflush(stdout);
        usleep(100 * 1000);
    }
    return 0;
}
