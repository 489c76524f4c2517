//! Fixed vocabularies and weights of the `accounts` workload (as in `gen_accounts.py`).
//!
//! Generated from `shared/bench/gen_accounts.py`; a unit test in `accounts.rs` checks the
//! documented shares (e.g. 消费 18.6 %, BASIC 40 %, status 0 70 %).

/// Region of a company name (provinces and large cities), weighted.
pub const REGIONS: &[(&str, f64)] = &[
    ("广东", 9.0),
    ("江苏", 8.0),
    ("浙江", 7.0),
    ("山东", 6.0),
    ("上海", 6.0),
    ("北京", 6.0),
    ("河南", 4.0),
    ("四川", 4.0),
    ("湖北", 3.5),
    ("福建", 3.5),
    ("湖南", 3.0),
    ("安徽", 3.0),
    ("河北", 3.0),
    ("陕西", 2.0),
    ("辽宁", 2.0),
    ("重庆", 2.5),
    ("天津", 2.0),
    ("江西", 2.0),
    ("广西", 1.5),
    ("云南", 1.5),
    ("山西", 1.2),
    ("贵州", 1.2),
    ("吉林", 1.0),
    ("黑龙江", 1.0),
    ("内蒙古", 0.8),
    ("新疆", 0.8),
    ("甘肃", 0.6),
    ("海南", 0.8),
    ("宁夏", 0.3),
    ("青海", 0.3),
    ("西藏", 0.2),
    ("深圳", 5.0),
    ("广州", 4.0),
    ("杭州", 4.0),
    ("苏州", 3.0),
    ("南京", 3.0),
    ("成都", 3.0),
    ("武汉", 2.5),
    ("西安", 2.0),
    ("宁波", 2.0),
    ("厦门", 1.5),
    ("青岛", 1.5),
    ("无锡", 1.5),
    ("长沙", 1.5),
    ("郑州", 1.5),
    ("合肥", 1.5),
    ("济南", 1.2),
    ("福州", 1.2),
    ("东莞", 1.5),
    ("佛山", 1.5),
    ("大连", 1.0),
    ("昆明", 0.8),
    ("南昌", 0.8),
    ("常州", 0.8),
    ("温州", 1.0),
    ("沈阳", 0.8),
    ("哈尔滨", 0.6),
    ("石家庄", 0.6),
    ("太原", 0.5),
    ("贵阳", 0.5),
    ("南宁", 0.6),
    ("兰州", 0.3),
    ("乌鲁木齐", 0.3),
];

/// Two-character brand words.
pub const BRAND2: &[&str] = &[
    "千米", "恒通", "鑫源", "宏达", "金桥", "中科", "远航", "博雅", "天成", "华信", "瑞丰", "汇通",
    "盛世", "永安", "德胜", "嘉禾", "新力", "东方", "正大", "明珠", "海纳", "云帆", "星辰", "启明",
    "万象", "锦程", "卓越", "恒泰", "同创", "安达", "润泽", "和信", "鼎盛", "智联", "优品", "乐购",
    "佳美", "百川", "金石", "青禾", "长风", "银河", "泰和", "旭日", "凯瑞", "丰收", "蓝海", "绿源",
    "红星", "天宇", "米兰", "千禧", "江南", "瑞祥", "米多", "千帆", "晨光", "四季", "景天", "宜家",
    "尚品", "创新", "世纪", "联合", "振华", "兴业", "广联", "宝利", "信达", "华美",
];

/// Three-character brand words.
pub const BRAND3: &[&str] = &[
    "新世纪",
    "大中华",
    "金太阳",
    "小米粒",
    "千里马",
    "好日子",
    "百事通",
    "万家乐",
    "金满堂",
    "新希望",
    "红太阳",
    "聚宝盆",
    "步步高",
    "一路发",
    "开心果",
    "向日葵",
];

/// Industry part of a company name, weighted.
pub const INDUSTRIES: &[(&str, f64)] = &[
    ("网络科技", 10.0),
    ("信息技术", 8.0),
    ("电子商务", 7.0),
    ("商贸", 8.0),
    ("实业", 6.0),
    ("建筑工程", 4.0),
    ("物流", 5.0),
    ("餐饮管理", 4.0),
    ("文化传媒", 4.0),
    ("生物科技", 3.0),
    ("新能源", 2.0),
    ("医药", 3.0),
    ("食品", 4.0),
    ("服饰", 3.0),
    ("机械设备", 3.0),
    ("教育咨询", 3.0),
    ("房地产开发", 2.0),
    ("农业发展", 2.0),
    ("供应链管理", 3.0),
    ("投资管理", 2.0),
    ("广告", 2.0),
    ("装饰设计", 2.0),
    ("电子", 3.0),
    ("汽车服务", 2.0),
];

/// Legal-form suffix of a company name, weighted.
pub const SUFFIXES: &[(&str, f64)] = &[
    ("有限公司", 70.0),
    ("股份有限公司", 8.0),
    ("有限责任公司", 8.0),
    ("集团有限公司", 4.0),
    ("商行", 4.0),
    ("工作室", 3.0),
    ("经营部", 3.0),
];

/// `balanceTypeName`: 30 transaction types, skewed.
pub const BALANCE_TYPES: &[(&str, f64)] = &[
    ("消费", 180.0),
    ("充值", 140.0),
    ("货款结算", 110.0),
    ("退款", 70.0),
    ("提现", 65.0),
    ("转账转入", 55.0),
    ("转账转出", 50.0),
    ("手续费", 45.0),
    ("佣金收入", 35.0),
    ("服务费", 30.0),
    ("运费", 26.0),
    ("平台补贴", 22.0),
    ("红包", 20.0),
    ("返现", 17.0),
    ("利息收入", 15.0),
    ("冻结", 13.0),
    ("解冻", 12.0),
    ("保证金缴纳", 10.0),
    ("保证金退还", 9.0),
    ("积分兑换", 8.0),
    ("广告费", 7.0),
    ("分润", 6.0),
    ("预付款", 5.0),
    ("押金", 4.0),
    ("奖励金", 4.0),
    ("提现退回", 3.0),
    ("赔付", 3.0),
    ("调账", 2.0),
    ("退款冲正", 2.0),
    ("罚款", 1.0),
];

/// `acctType`, fixed per account.
pub const ACCT_TYPES: &[(&str, f64)] = &[
    ("BASIC", 40.0),
    ("SETTLEMENT", 25.0),
    ("DEPOSIT", 15.0),
    ("CREDIT", 10.0),
    ("VIRTUAL", 6.0),
    ("ESCROW", 4.0),
];

/// `status` 0..=3 with weights out of 64.
pub const STATUS_WEIGHTS: &[(u8, f64)] = &[(0, 45.0), (1, 12.0), (2, 5.0), (3, 2.0)];

/// Chinese remarks.
pub const REMARK_CN: &[&str] = &[
    "订单支付",
    "订单退款",
    "账户充值",
    "余额提现",
    "平台结算",
    "系统调账",
    "活动奖励",
    "手续费扣除",
    "保证金冻结",
    "保证金解冻",
    "月度结算",
    "季度返利",
    "运费补贴",
    "客户转账",
    "供应商付款",
    "退货退款",
    "积分抵扣",
    "优惠券核销",
];

/// English remarks.
pub const REMARK_EN: &[&str] = &[
    "order payment",
    "refund",
    "top-up via bank card",
    "withdrawal to bank",
    "monthly settlement",
    "manual adjustment",
    "promo reward",
    "service fee",
    "deposit frozen",
    "deposit released",
    "transfer in",
    "transfer out",
    "rebate Q3",
    "shipping subsidy",
];

/// Default number of documents of the reference corpus.
pub const DOCS_DEFAULT: u64 = 1120000;
/// Default number of distinct accounts.
pub const ACCOUNTS_DEFAULT: u32 = 200000;
/// Popularity rank of account `A00000000000` (about 152 documents in the default corpus).
pub const ACCOUNT0_RANK: usize = 400;
/// `userName` of account `A00000000000`.
pub const ACCOUNT0_NAME: &str = "江苏千米网络科技有限公司";
/// 2018-01-01T00:00:00.000+0800 in epoch milliseconds.
pub const T0_MS: i64 = 1514736000000;
/// Days covered (2018-01-01 .. 2021-12-31, +08:00).
pub const DAYS: i64 = 1461;
/// Milliseconds per day.
pub const DAY_MS: i64 = 86400000;
/// Time span of `createdTime`, exclusive upper bound relative to [`T0_MS`].
pub const SPAN_MS: i64 = DAYS * DAY_MS;
