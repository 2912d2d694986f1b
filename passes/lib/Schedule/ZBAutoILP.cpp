// temporary stub
#include "ZBAuto.h"
using namespace zbc::sched;
llvm::Expected<zbauto::Order> zbauto::solveExact(const Instance &, const Order &h, double, double, BuildReport &) { return h; }
